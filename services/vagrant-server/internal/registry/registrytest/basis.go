package registrytest

import (
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

func basisBehaviours() []behaviour {
	return []behaviour{
		{Name: "basis/round trip keeps every field and Any payload", Run: func(st *StoreTest) {
			b := newBasis("dev")
			got := testenv.Must(st.Store.CreateBasis(st.Ctx, b))(st.T)
			equal(st.T, "created basis", got, b)
			st.Restart()
			equal(st.T, "stored basis", testenv.Must(st.Store.GetBasis(st.Ctx, b.ResourceId))(st.T), b)
		}},
		{Name: "basis/unset and empty nested messages stay apart", Run: func(st *StoreTest) {
			b := &vagrant.Basis{ResourceId: id(), Name: "bare", Path: "/bare", Metadata: &sdk.Args_MetadataSet{},
				Configuration: &vagrant.Vagrantfile{}}
			testenv.Must(st.Store.CreateBasis(st.Ctx, b))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.GetBasis(st.Ctx, b.ResourceId))(st.T)
			if got.Configuration == nil || got.Metadata == nil || got.DataSource != nil {
				st.T.Fatalf("presence lost: configuration %v metadata %v data_source %v", got.Configuration, got.Metadata, got.DataSource)
			}
		}},
		{Name: "basis/name and path are each unique", Run: func(st *StoreTest) {
			first := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("dev")))(st.T)
			sameName := newBasis("dev")
			sameName.Path = "/elsewhere"
			_, err := st.Store.CreateBasis(st.Ctx, sameName)
			precondition(st.T, "same name", err, "basis.name")
			samePath := newBasis("other")
			samePath.Path = first.Path
			_, err = st.Store.CreateBasis(st.Ctx, samePath)
			precondition(st.T, "same path", err, "basis.path")
			st.Restart()
			if refs := testenv.Must(st.Store.ListBasis(st.Ctx))(st.T); len(refs) != 1 {
				st.T.Fatalf("refused creates left rows: %v", refs)
			}
		}},
		{Name: "basis/get and find", Run: func(st *StoreTest) {
			a := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("a")))(st.T)
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("b")))(st.T)
			st.Restart()
			_, err := st.Store.GetBasis(st.Ctx, id())
			notFound(st.T, "unknown id", err)
			equal(st.T, "by name", testenv.Must(st.Store.FindBasis(st.Ctx, registry.BasisQuery{Name: "b"}))(st.T), b)
			equal(st.T, "by path", testenv.Must(st.Store.FindBasis(st.Ctx, registry.BasisQuery{Path: a.Path}))(st.T), a)
			equal(st.T, "by both", testenv.Must(st.Store.FindBasis(st.Ctx, registry.BasisQuery{Name: "a", Path: a.Path}))(st.T), a)
			_, err = st.Store.FindBasis(st.Ctx, registry.BasisQuery{Name: "a", Path: b.Path})
			notFound(st.T, "name of one, path of another", err)
			_, err = st.Store.FindBasis(st.Ctx, registry.BasisQuery{})
			notFound(st.T, "empty query", err)
			refs := testenv.Must(st.Store.ListBasis(st.Ctx))(st.T)
			if len(refs) != 2 || refs[0].ResourceId != a.ResourceId || refs[1].Name != "b" || refs[1].Path != b.Path {
				st.T.Fatalf("list: %v", refs)
			}
		}},
		{Name: "basis/update holds the row and keeps the id", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("dev")))(st.T)
			other := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("other")))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.UpdateBasis(st.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
				cur.Name, cur.RemoteEnabled, cur.DataSource = "renamed", false, nil
				return nil
			}))(st.T)
			if got.Name != "renamed" || got.RemoteEnabled || got.DataSource != nil || got.ResourceId != b.ResourceId {
				st.T.Fatalf("updated: %v", got)
			}
			refused := errors.New("refused by the closure")
			if _, err := st.Store.UpdateBasis(st.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
				cur.Name = "never"
				return refused
			}); !errors.Is(err, refused) {
				st.T.Fatalf("closure error: %v", err)
			}
			_, err := st.Store.UpdateBasis(st.Ctx, b.ResourceId, func(cur *vagrant.Basis) error { cur.Name = other.Name; return nil })
			precondition(st.T, "rename onto a taken name", err, "basis.name")
			_, err = st.Store.UpdateBasis(st.Ctx, id(), func(*vagrant.Basis) error { return nil })
			notFound(st.T, "update unknown", err)
			equal(st.T, "after refused updates", testenv.Must(st.Store.GetBasis(st.Ctx, b.ResourceId))(st.T), got)
		}},
		{Name: "basis/concurrent updates lose nothing", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("busy")))(st.T)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					_, err := st.Store.UpdateBasis(st.Ctx, b.ResourceId, func(cur *vagrant.Basis) error {
						cur.Metadata.Metadata[fmt.Sprint("k", i)] = "v"
						return nil
					})
					if err != nil {
						st.T.Error(err)
					}
				})
			}
			wg.Wait()
			st.Restart()
			if got := testenv.Must(st.Store.GetBasis(st.Ctx, b.ResourceId))(st.T); len(got.Metadata.Metadata) != 1+8 {
				st.T.Fatalf("metadata after 8 concurrent read-modify-writes: %v", got.Metadata.Metadata)
			}
		}},
		{Name: "basis/lists its projects", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("dev")))(st.T)
			p1 := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b.ResourceId, "web")))(st.T)
			p2 := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b.ResourceId, "db")))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.GetBasis(st.Ctx, b.ResourceId))(st.T)
			ref := &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
			want := []*sdk.Ref_Project{
				{ResourceId: p1.ResourceId, Name: "web", Path: p1.Path, Basis: ref},
				{ResourceId: p2.ResourceId, Name: "db", Path: p2.Path, Basis: proto.Clone(ref).(*sdk.Ref_Basis)},
			}
			equal(st.T, "projects", &vagrant.Basis{Projects: got.Projects}, &vagrant.Basis{Projects: want})
		}},
	}
}
