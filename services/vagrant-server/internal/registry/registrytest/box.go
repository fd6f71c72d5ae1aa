package registrytest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func boxBehaviours() []behaviour {
	return []behaviour{
		{"box/round trip keeps metadata and last update", func(st *StoreTest) {
			b := newBox("ubuntu/jammy64", "1.0.0", "netns")
			equal(st.T, "created box", must(st.Store.CreateBox(st.Ctx, b))(st.T), b)
			st.Restart()
			equal(st.T, "stored box", must(st.Store.GetBox(st.Ctx, b.ResourceId))(st.T), b)
			refs := must(st.Store.ListBoxes(st.Ctx))(st.T)
			if len(refs) != 1 {
				st.T.Fatalf("list: %v", refs)
			}
			equal(st.T, "listed ref", refs[0], &sdk.Ref_Box{ResourceId: b.ResourceId, Name: b.Name, Version: "1.0.0", Provider: "netns"})
		}},
		{"box/name+version+provider and directory are unique", func(st *StoreTest) {
			b := must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "netns")))(st.T)
			must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.1", "netns")))(st.T)
			must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "libvirt")))(st.T)
			st.Restart()
			dup := newBox("ubuntu", "1.0.0", "netns")
			dup.Directory = "/elsewhere"
			_, err := st.Store.CreateBox(st.Ctx, dup)
			precondition(st.T, "same name, version and provider", err, "box.name")
			sameDir := newBox("debian", "12.0.0", "netns")
			sameDir.Directory = b.Directory
			_, err = st.Store.CreateBox(st.Ctx, sameDir)
			precondition(st.T, "same directory", err, "box.directory")
		}},
		{"box/versions of one name and provider", func(st *StoreTest) {
			for _, v := range []string{"1.0.0", "2.0.0", "1.5.0"} {
				must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", v, "netns")))(st.T)
			}
			must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "3.0.0", "libvirt")))(st.T)
			st.Restart()
			got := must(st.Store.BoxesNamed(st.Ctx, "ubuntu", "netns"))(st.T)
			if len(got) != 3 {
				st.T.Fatalf("versions: %v", got)
			}
			if none := must(st.Store.BoxesNamed(st.Ctx, "debian", "netns"))(st.T); len(none) != 0 {
				st.T.Fatalf("unknown box: %v", none)
			}
		}},
		{"box/update and delete", func(st *StoreTest) {
			b := must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "netns")))(st.T)
			st.Restart()
			got := must(st.Store.UpdateBox(st.Ctx, b.ResourceId, func(cur *vagrant.Box) error {
				cur.MetadataUrl, cur.Metadata = "https://mirror.example/ubuntu", nil
				return nil
			}))(st.T)
			if got.MetadataUrl != "https://mirror.example/ubuntu" || got.Metadata != nil || got.ResourceId != b.ResourceId {
				st.T.Fatalf("after update: %v", got)
			}
			ok(st.T, st.Store.DeleteBox(st.Ctx, b.ResourceId))
			ok(st.T, st.Store.DeleteBox(st.Ctx, b.ResourceId))
			st.Restart()
			_, err := st.Store.GetBox(st.Ctx, b.ResourceId)
			notFound(st.T, "deleted box", err)
		}},
	}
}
