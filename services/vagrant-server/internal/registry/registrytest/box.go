package registrytest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func boxBehaviours() []behaviour {
	return []behaviour{
		{"box/round trip keeps metadata and last update", func(h *H) {
			b := newBox("ubuntu/jammy64", "1.0.0", "netns")
			equal(h.T, "created box", must(h.Store.CreateBox(h.Ctx, b))(h.T), b)
			h.Restart()
			equal(h.T, "stored box", must(h.Store.GetBox(h.Ctx, b.ResourceId))(h.T), b)
			refs := must(h.Store.ListBoxes(h.Ctx))(h.T)
			if len(refs) != 1 {
				h.T.Fatalf("list: %v", refs)
			}
			equal(h.T, "listed ref", refs[0], &sdk.Ref_Box{ResourceId: b.ResourceId, Name: b.Name, Version: "1.0.0", Provider: "netns"})
		}},
		{"box/name+version+provider and directory are unique", func(h *H) {
			b := must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", "1.0.0", "netns")))(h.T)
			must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", "1.0.1", "netns")))(h.T)
			must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", "1.0.0", "libvirt")))(h.T)
			h.Restart()
			dup := newBox("ubuntu", "1.0.0", "netns")
			dup.Directory = "/elsewhere"
			_, err := h.Store.CreateBox(h.Ctx, dup)
			precondition(h.T, "same name, version and provider", err, "box.name")
			sameDir := newBox("debian", "12.0.0", "netns")
			sameDir.Directory = b.Directory
			_, err = h.Store.CreateBox(h.Ctx, sameDir)
			precondition(h.T, "same directory", err, "box.directory")
		}},
		{"box/versions of one name and provider", func(h *H) {
			for _, v := range []string{"1.0.0", "2.0.0", "1.5.0"} {
				must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", v, "netns")))(h.T)
			}
			must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", "3.0.0", "libvirt")))(h.T)
			h.Restart()
			got := must(h.Store.BoxesNamed(h.Ctx, "ubuntu", "netns"))(h.T)
			if len(got) != 3 {
				h.T.Fatalf("versions: %v", got)
			}
			if none := must(h.Store.BoxesNamed(h.Ctx, "debian", "netns"))(h.T); len(none) != 0 {
				h.T.Fatalf("unknown box: %v", none)
			}
		}},
		{"box/update and delete", func(h *H) {
			b := must(h.Store.CreateBox(h.Ctx, newBox("ubuntu", "1.0.0", "netns")))(h.T)
			h.Restart()
			got := must(h.Store.UpdateBox(h.Ctx, b.ResourceId, func(cur *vagrant.Box) error {
				cur.MetadataUrl, cur.Metadata = "https://mirror.example/ubuntu", nil
				return nil
			}))(h.T)
			if got.MetadataUrl != "https://mirror.example/ubuntu" || got.Metadata != nil || got.ResourceId != b.ResourceId {
				h.T.Fatalf("after update: %v", got)
			}
			ok(h.T, h.Store.DeleteBox(h.Ctx, b.ResourceId))
			ok(h.T, h.Store.DeleteBox(h.Ctx, b.ResourceId))
			h.Restart()
			_, err := h.Store.GetBox(h.Ctx, b.ResourceId)
			notFound(h.T, "deleted box", err)
		}},
	}
}
