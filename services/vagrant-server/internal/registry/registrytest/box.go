package registrytest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func boxBehaviours() []behaviour {
	return []behaviour{
		{Name: "box/round trip keeps metadata and last update", Run: func(st *StoreTest) {
			b := newBox("ubuntu/jammy64", "1.0.0", "netns")
			equal(st.T, "created box", testenv.Must(st.Store.CreateBox(st.Ctx, b))(st.T), b)
			st.Restart()
			equal(st.T, "stored box", testenv.Must(st.Store.GetBox(st.Ctx, b.ResourceId))(st.T), b)
			refs := testenv.Must(st.Store.ListBoxes(st.Ctx))(st.T)
			if len(refs) != 1 {
				st.T.Fatalf("list: %v", refs)
			}
			equal(st.T, "listed ref", refs[0], &sdk.Ref_Box{ResourceId: b.ResourceId, Name: b.Name, Version: "1.0.0", Provider: "netns"})
		}},
		{Name: "box/name+version+provider and directory are unique", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "netns")))(st.T)
			testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.1", "netns")))(st.T)
			testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "libvirt")))(st.T)
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
		{Name: "box/versions of one name and provider", Run: func(st *StoreTest) {
			for _, v := range []string{"1.0.0", "2.0.0", "1.5.0"} {
				testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", v, "netns")))(st.T)
			}
			testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "3.0.0", "libvirt")))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.BoxesNamed(st.Ctx, "ubuntu", "netns"))(st.T)
			if len(got) != 3 {
				st.T.Fatalf("versions: %v", got)
			}
			if none := testenv.Must(st.Store.BoxesNamed(st.Ctx, "debian", "netns"))(st.T); len(none) != 0 {
				st.T.Fatalf("unknown box: %v", none)
			}
		}},
		{Name: "box/update and delete", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBox(st.Ctx, newBox("ubuntu", "1.0.0", "netns")))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.UpdateBox(st.Ctx, b.ResourceId, func(cur *vagrant.Box) error {
				cur.MetadataUrl, cur.Metadata = "https://mirror.example/ubuntu", nil
				return nil
			}))(st.T)
			if got.MetadataUrl != "https://mirror.example/ubuntu" || got.Metadata != nil || got.ResourceId != b.ResourceId {
				st.T.Fatalf("after update: %v", got)
			}
			testenv.OK(st.T, st.Store.DeleteBox(st.Ctx, b.ResourceId))
			testenv.OK(st.T, st.Store.DeleteBox(st.Ctx, b.ResourceId))
			st.Restart()
			_, err := st.Store.GetBox(st.Ctx, b.ResourceId)
			notFound(st.T, "deleted box", err)
		}},
	}
}
