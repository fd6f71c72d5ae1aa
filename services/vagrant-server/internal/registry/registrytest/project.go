package registrytest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

func projectBehaviours() []behaviour {
	return []behaviour{
		{"project/round trip fills the basis reference", func(h *H) {
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("dev")))(h.T)
			p := newProject(b.ResourceId, "web")
			must(h.Store.CreateProject(h.Ctx, p))(h.T)
			h.Restart()
			p.Basis = &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}
			equal(h.T, "stored project", must(h.Store.GetProject(h.Ctx, p.ResourceId))(h.T), p)
			refs := must(h.Store.ListProjects(h.Ctx))(h.T)
			want := &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			if len(refs) != 1 {
				h.T.Fatalf("list: %v", refs)
			}
			equal(h.T, "listed ref", refs[0], want)
		}},
		{"project/needs an existing basis", func(h *H) {
			_, err := h.Store.CreateProject(h.Ctx, newProject(id(), "orphan"))
			precondition(h.T, "unknown basis", err, "project.basis")
		}},
		{"project/name and path are unique within a basis only", func(h *H) {
			b1 := must(h.Store.CreateBasis(h.Ctx, newBasis("one")))(h.T)
			b2 := must(h.Store.CreateBasis(h.Ctx, newBasis("two")))(h.T)
			p := must(h.Store.CreateProject(h.Ctx, newProject(b1.ResourceId, "web")))(h.T)
			must(h.Store.CreateProject(h.Ctx, newProject(b2.ResourceId, "web")))(h.T) // same name and path, other basis
			h.Restart()
			sameName := newProject(b1.ResourceId, "web")
			sameName.Path = "/other"
			_, err := h.Store.CreateProject(h.Ctx, sameName)
			precondition(h.T, "same name in basis", err, "project.name")
			samePath := newProject(b1.ResourceId, "api")
			samePath.Path = p.Path
			_, err = h.Store.CreateProject(h.Ctx, samePath)
			precondition(h.T, "same path in basis", err, "project.path")
		}},
		{"project/find by name or path within the basis", func(h *H) {
			b1 := must(h.Store.CreateBasis(h.Ctx, newBasis("one")))(h.T)
			b2 := must(h.Store.CreateBasis(h.Ctx, newBasis("two")))(h.T)
			p1 := must(h.Store.CreateProject(h.Ctx, newProject(b1.ResourceId, "web")))(h.T)
			p2 := must(h.Store.CreateProject(h.Ctx, newProject(b2.ResourceId, "web")))(h.T)
			h.Restart()
			equal(h.T, "by name in b2", must(h.Store.FindProject(h.Ctx, registry.ProjectQuery{BasisID: b2.ResourceId, Name: "web"}))(h.T), p2)
			equal(h.T, "by path in b1", must(h.Store.FindProject(h.Ctx, registry.ProjectQuery{BasisID: b1.ResourceId, Path: p1.Path}))(h.T), p1)
			_, err := h.Store.FindProject(h.Ctx, registry.ProjectQuery{BasisID: b1.ResourceId, Name: "db"})
			notFound(h.T, "unknown name", err)
			_, err = h.Store.GetProject(h.Ctx, id())
			notFound(h.T, "unknown id", err)
		}},
		{"project/update never moves it", func(h *H) {
			b1 := must(h.Store.CreateBasis(h.Ctx, newBasis("one")))(h.T)
			b2 := must(h.Store.CreateBasis(h.Ctx, newBasis("two")))(h.T)
			p := must(h.Store.CreateProject(h.Ctx, newProject(b1.ResourceId, "web")))(h.T)
			h.Restart()
			got := must(h.Store.UpdateProject(h.Ctx, p.ResourceId, func(cur *vagrant.Project) error {
				cur.Basis = &sdk.Ref_Basis{ResourceId: b2.ResourceId}
				cur.Path = "/moved"
				return nil
			}))(h.T)
			if got.Basis.ResourceId != b1.ResourceId || got.Path != "/moved" {
				h.T.Fatalf("after update: %v", got)
			}
		}},
		{"project/lists its targets", func(h *H) {
			b := must(h.Store.CreateBasis(h.Ctx, newBasis("dev")))(h.T)
			p := must(h.Store.CreateProject(h.Ctx, newProject(b.ResourceId, "web")))(h.T)
			t := must(h.Store.CreateTarget(h.Ctx, newTarget(p.ResourceId, "default")))(h.T)
			h.Restart()
			got := must(h.Store.GetProject(h.Ctx, p.ResourceId))(h.T)
			want := &sdk.Ref_Target{ResourceId: t.ResourceId, Name: "default", Project: &sdk.Ref_Project{
				ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path}}}
			if len(got.Targets) != 1 {
				h.T.Fatalf("targets: %v", got.Targets)
			}
			equal(h.T, "target ref", got.Targets[0], want)
		}},
	}
}
