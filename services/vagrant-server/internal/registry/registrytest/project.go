package registrytest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

func projectBehaviours() []behaviour {
	return []behaviour{
		{Name: "project/round trip fills the basis reference", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("dev")))(st.T)
			p := newProject(b.ResourceId, "web")
			testenv.Must(st.Store.CreateProject(st.Ctx, p))(st.T)
			st.Restart()
			p.Basis = &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
			equal(st.T, "stored project", testenv.Must(st.Store.GetProject(st.Ctx, p.ResourceId))(st.T), p)
			refs := testenv.Must(st.Store.ListProjects(st.Ctx))(st.T)
			want := &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			if len(refs) != 1 {
				st.T.Fatalf("list: %v", refs)
			}
			equal(st.T, "listed ref", refs[0], want)
		}},
		{Name: "project/needs an existing basis", Run: func(st *StoreTest) {
			_, err := st.Store.CreateProject(st.Ctx, newProject(id(), "orphan"))
			precondition(st.T, "unknown basis", err, "project.basis")
		}},
		{Name: "project/name and path are unique within a basis only", Run: func(st *StoreTest) {
			b1 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("one")))(st.T)
			b2 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("two")))(st.T)
			p := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b1.ResourceId, "web")))(st.T)
			testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b2.ResourceId, "web")))(st.T) // same name and path, other basis
			st.Restart()
			sameName := newProject(b1.ResourceId, "web")
			sameName.Path = "/other"
			_, err := st.Store.CreateProject(st.Ctx, sameName)
			precondition(st.T, "same name in basis", err, "project.name")
			samePath := newProject(b1.ResourceId, "api")
			samePath.Path = p.Path
			_, err = st.Store.CreateProject(st.Ctx, samePath)
			precondition(st.T, "same path in basis", err, "project.path")
		}},
		{Name: "project/find by name or path within the basis", Run: func(st *StoreTest) {
			b1 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("one")))(st.T)
			b2 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("two")))(st.T)
			p1 := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b1.ResourceId, "web")))(st.T)
			p2 := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b2.ResourceId, "web")))(st.T)
			st.Restart()
			equal(st.T, "by name in b2", testenv.Must(st.Store.FindProject(st.Ctx, registry.ProjectQuery{BasisID: b2.ResourceId, Name: "web"}))(st.T), p2)
			equal(st.T, "by path in b1", testenv.Must(st.Store.FindProject(st.Ctx, registry.ProjectQuery{BasisID: b1.ResourceId, Path: p1.Path}))(st.T), p1)
			_, err := st.Store.FindProject(st.Ctx, registry.ProjectQuery{BasisID: b1.ResourceId, Name: "db"})
			notFound(st.T, "unknown name", err)
			_, err = st.Store.GetProject(st.Ctx, id())
			notFound(st.T, "unknown id", err)
		}},
		{Name: "project/update never moves it", Run: func(st *StoreTest) {
			b1 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("one")))(st.T)
			b2 := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("two")))(st.T)
			p := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b1.ResourceId, "web")))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.UpdateProject(st.Ctx, p.ResourceId, func(cur *vagrant.Project) error {
				cur.Basis = &sdk.Ref_Basis{ResourceId: b2.ResourceId}
				cur.Path = "/moved"
				return nil
			}))(st.T)
			if got.Basis.ResourceId != b1.ResourceId || got.Path != "/moved" {
				st.T.Fatalf("after update: %v", got)
			}
		}},
		{Name: "project/lists its targets", Run: func(st *StoreTest) {
			b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis("dev")))(st.T)
			p := testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b.ResourceId, "web")))(st.T)
			t := testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p.ResourceId, "default"))))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.GetProject(st.Ctx, p.ResourceId))(st.T)
			want := &sdk.Ref_Target{ResourceId: t.ResourceId, Name: "default", Project: &sdk.Ref_Project{
				ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}}}
			if len(got.Targets) != 1 {
				st.T.Fatalf("targets: %v", got.Targets)
			}
			equal(st.T, "target ref", got.Targets[0], want)
		}},
	}
}
