package registrytest

import (
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

func basisBehaviours() []behaviour {
	return []behaviour{
		{"basis/round trip keeps every field and Any payload", func(h *H) {
			b := newBasis("dev")
			got := must(h.Store.CreateBasis(h.Ctx, b))(h.T)
			equal(h.T, "created basis", got, b)
			h.Restart()
			equal(h.T, "stored basis", must(h.Store.GetBasis(h.Ctx, b.ResourceId))(h.T), b)
		}},
		{"basis/unset and empty nested messages stay apart", func(h *H) {
			b := &vagrant.Basis{ResourceId: id(), Name: "bare", Path: "/bare", Metadata: &sdk.Args_MetadataSet{},
				Configuration: &vagrant.Vagrantfile{}}
			must(h.Store.CreateBasis(h.Ctx, b))(h.T)
			h.Restart()
			got := must(h.Store.GetBasis(h.Ctx, b.ResourceId))(h.T)
			if got.Configuration == nil || got.Metadata == nil || got.DataSource != nil {
				h.T.Fatalf("presence lost: configuration %v metadata %v data_source %v", got.Configuration, got.Metadata, got.DataSource)
			}
		}},
		{"basis/name and path are each unique", func(h *H) {
			first := must(h.Store.CreateBasis(h.Ctx, newBasis("dev")))(h.T)
			sameName := newBasis("dev")
			sameName.Path = "/elsewhere"
			_, err := h.Store.CreateBasis(h.Ctx, sameName)
			precondition(h.T, "same name", err, "basis.name")
			samePath := newBasis("other")
			samePath.Path = first.Path
			_, err = h.Store.CreateBasis(h.Ctx, samePath)
			precondition(h.T, "same path", err, "basis.path")
			h.Restart()
			if refs := must(h.Store.ListBasis(h.Ctx))(h.T); len(refs) != 1 {
				h.T.Fatalf("refused creates left rows: %v", refs)
			}
		}},
		{"basis/get and find", func(h *H) {
			a := must(h.Store.CreateBasis(h.Ctx, newBasis("a")))(h.T)
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("b")))(h.T)
			h.Restart()
			_, err := h.Store.GetBasis(h.Ctx, id())
			notFound(h.T, "unknown id", err)
			equal(h.T, "by name", must(h.Store.FindBasis(h.Ctx, registry.BasisQuery{Name: "b"}))(h.T), b)
			equal(h.T, "by path", must(h.Store.FindBasis(h.Ctx, registry.BasisQuery{Path: a.Path}))(h.T), a)
			equal(h.T, "by both", must(h.Store.FindBasis(h.Ctx, registry.BasisQuery{Name: "a", Path: a.Path}))(h.T), a)
			_, err = h.Store.FindBasis(h.Ctx, registry.BasisQuery{Name: "a", Path: b.Path})
			notFound(h.T, "name of one, path of another", err)
			_, err = h.Store.FindBasis(h.Ctx, registry.BasisQuery{})
			notFound(h.T, "empty query", err)
			refs := must(h.Store.ListBasis(h.Ctx))(h.T)
			if len(refs) != 2 || refs[0].ResourceId != a.ResourceId || refs[1].Name != "b" || refs[1].Path != b.Path {
				h.T.Fatalf("list: %v", refs)
			}
		}},
		{"basis/update holds the row and keeps the id", func(h *H) {
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("dev")))(h.T)
			other := must(h.Store.CreateBasis(h.Ctx, newBasis("other")))(h.T)
			h.Restart()
			got := must(h.Store.UpdateBasis(h.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
				cur.Name, cur.RemoteEnabled, cur.DataSource = "renamed", false, nil
				return nil
			}))(h.T)
			if got.Name != "renamed" || got.RemoteEnabled || got.DataSource != nil || got.ResourceId != b.ResourceId {
				h.T.Fatalf("updated: %v", got)
			}
			refused := errors.New("refused by the closure")
			if _, err := h.Store.UpdateBasis(h.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
				cur.Name = "never"
				return refused
			}); !errors.Is(err, refused) {
				h.T.Fatalf("closure error: %v", err)
			}
			_, err := h.Store.UpdateBasis(h.Ctx, b.ResourceId, func(cur *vagrant.Basis) error { cur.Name = other.Name; return nil })
			precondition(h.T, "rename onto a taken name", err, "basis.name")
			_, err = h.Store.UpdateBasis(h.Ctx, id(), func(*vagrant.Basis) error { return nil })
			notFound(h.T, "update unknown", err)
			equal(h.T, "after refused updates", must(h.Store.GetBasis(h.Ctx, b.ResourceId))(h.T), got)
		}},
		{"basis/concurrent updates lose nothing", func(h *H) {
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("busy")))(h.T)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					_, err := h.Store.UpdateBasis(h.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
						cur.Metadata.Metadata[fmt.Sprint("k", i)] = "v"
						return nil
					})
					if err != nil {
						h.T.Error(err)
					}
				})
			}
			wg.Wait()
			h.Restart()
			if got := must(h.Store.GetBasis(h.Ctx, b.ResourceId))(h.T); len(got.Metadata.Metadata) != 1+8 {
				h.T.Fatalf("metadata after 8 concurrent read-modify-writes: %v", got.Metadata.Metadata)
			}
		}},
		{"basis/lists its projects", func(h *H) {
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("dev")))(h.T)
			p1 := must(h.Store.CreateProject(h.Ctx, newProject(b.ResourceId, "web")))(h.T)
			p2 := must(h.Store.CreateProject(h.Ctx, newProject(b.ResourceId, "db")))(h.T)
			h.Restart()
			got := must(h.Store.GetBasis(h.Ctx, b.ResourceId))(h.T)
			ref := &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
			want := []*sdk.Ref_Project{
				{ResourceId: p1.ResourceId, Name: "web", Path: p1.Path, Basis: ref},
				{ResourceId: p2.ResourceId, Name: "db", Path: p2.Path, Basis: proto.Clone(ref).(*sdk.Ref_Basis)},
			}
			equal(h.T, "projects", &vagrant.Basis{Projects: got.Projects}, &vagrant.Basis{Projects: want})
		}},
	}
}
