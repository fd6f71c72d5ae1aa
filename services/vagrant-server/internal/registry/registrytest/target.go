package registrytest

import (
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

// project creates a basis and a project for target behaviours.
func project(h *H, name string) *vagrant.Project {
	b := must(h.Store.CreateBasis(h.Ctx, newBasis(name)))(h.T)
	return must(h.Store.CreateProject(h.Ctx, newProject(b.ResourceId, name)))(h.T)
}

func targetBehaviours() []behaviour {
	return []behaviour{
		{"target/round trip returns the record and configuration byte for byte", func(h *H) {
			p := project(h, "dev")
			t := newTarget(p.ResourceId, "default")
			t.Uuid = "4f1c2e8a-0000-4000-8000-000000000001"
			must(h.Store.CreateTarget(h.Ctx, t))(h.T)
			h.Restart()
			got := must(h.Store.GetTarget(h.Ctx, t.ResourceId))(h.T)
			if !proto.Equal(got.Record, t.Record) || string(got.Record.Value) != string(t.Record.Value) {
				h.T.Fatalf("record changed: %v, want %v", got.Record, t.Record)
			}
			want := proto.Clone(t).(*vagrant.Target)
			want.Project = &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			equal(h.T, "stored target", got, want)
			refs := must(h.Store.ListTargets(h.Ctx))(h.T)
			if len(refs) != 1 {
				h.T.Fatalf("list: %v", refs)
			}
			equal(h.T, "listed ref", refs[0], &sdk.Ref_Target{ResourceId: t.ResourceId, Name: t.Name, Project: want.Project})
		}},
		{"target/needs an existing project", func(h *H) {
			_, err := h.Store.CreateTarget(h.Ctx, newTarget(id(), "orphan"))
			precondition(h.T, "unknown project", err, "target.project")
		}},
		{"target/name is unique within a project, uuid everywhere", func(h *H) {
			p1, p2 := project(h, "one"), project(h, "two")
			a := newTarget(p1.ResourceId, "default")
			a.Uuid = "aaaa-1"
			must(h.Store.CreateTarget(h.Ctx, a))(h.T)
			must(h.Store.CreateTarget(h.Ctx, newTarget(p2.ResourceId, "default")))(h.T) // other project
			h.Restart()
			_, err := h.Store.CreateTarget(h.Ctx, newTarget(p1.ResourceId, "default"))
			precondition(h.T, "same name", err, "target.name")
			sameUUID := newTarget(p2.ResourceId, "other")
			sameUUID.Uuid = a.Uuid
			_, err = h.Store.CreateTarget(h.Ctx, sameUUID)
			precondition(h.T, "same uuid", err, "target.uuid")
			// Targets without a uuid do not collide on it.
			must(h.Store.CreateTarget(h.Ctx, newTarget(p1.ResourceId, "no-uuid-1")))(h.T)
			must(h.Store.CreateTarget(h.Ctx, newTarget(p1.ResourceId, "no-uuid-2")))(h.T)
		}},
		{"target/find by name, by uuid prefix", func(h *H) {
			p := project(h, "dev")
			mk := func(name, uuid string) *vagrant.Target {
				t := newTarget(p.ResourceId, name)
				t.Uuid = uuid
				return must(h.Store.CreateTarget(h.Ctx, t))(h.T)
			}
			web := mk("web", "7a3f")
			db := mk("db", "7a3f91")
			mk("cache", "b_1%")
			other := mk("other", "bx1z")
			h.Restart()
			equal(h.T, "by name", must(h.Store.FindTarget(h.Ctx, registry.TargetQuery{ProjectID: p.ResourceId, Name: "db"}))(h.T), db)
			equal(h.T, "unique prefix", must(h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "7a3f9"}))(h.T), db)
			equal(h.T, "exact uuid beats longer ones", must(h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "7a3f"}))(h.T), web)
			_, err := h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "7a"})
			precondition(h.T, "ambiguous prefix", err, "target.uuid")
			equal(h.T, "LIKE wildcards are literal", must(h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "bx"}))(h.T), other)
			_, err = h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "b_"}) // would match bx1z as a wildcard
			if err != nil {
				h.T.Fatalf("b_ must match only the cache target: %v", err)
			}
			_, err = h.Store.FindTarget(h.Ctx, registry.TargetQuery{UUIDPrefix: "ffff"})
			notFound(h.T, "unknown prefix", err)
			_, err = h.Store.FindTarget(h.Ctx, registry.TargetQuery{ProjectID: p.ResourceId, Name: "nope"})
			notFound(h.T, "unknown name", err)
		}},
		{"target/parents and subtargets", func(h *H) {
			p := project(h, "dev")
			parent := must(h.Store.CreateTarget(h.Ctx, newTarget(p.ResourceId, "host")))(h.T)
			child := newTarget(p.ResourceId, "guest")
			child.Parent = &sdk.Ref_Target{ResourceId: parent.ResourceId}
			child = must(h.Store.CreateTarget(h.Ctx, child))(h.T)
			h.Restart()
			pref := &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			equal(h.T, "child's parent", must(h.Store.GetTarget(h.Ctx, child.ResourceId))(h.T).Parent,
				&sdk.Ref_Target{ResourceId: parent.ResourceId, Name: "host", Project: pref})
			subs := must(h.Store.GetTarget(h.Ctx, parent.ResourceId))(h.T).Subtargets
			if len(subs) != 1 {
				h.T.Fatalf("subtargets: %v", subs)
			}
			equal(h.T, "subtarget", subs[0], &sdk.Ref_Target{ResourceId: child.ResourceId, Name: "guest", Project: pref})
			_, err := h.Store.UpdateTarget(h.Ctx, parent.ResourceId, func(cur *vagrant.Target) error {
				cur.Parent = &sdk.Ref_Target{ResourceId: cur.ResourceId}
				return nil
			})
			precondition(h.T, "own parent", err, "target.parent")
			ok(h.T, h.Store.DeleteTarget(h.Ctx, parent.ResourceId))
			h.Restart()
			if got := must(h.Store.GetTarget(h.Ctx, child.ResourceId))(h.T); got.Parent != nil {
				h.T.Fatalf("deleted parent still referenced: %v", got.Parent)
			}
		}},
		{"target/update keeps project and id, delete is idempotent", func(h *H) {
			p1, p2 := project(h, "one"), project(h, "two")
			t := must(h.Store.CreateTarget(h.Ctx, newTarget(p1.ResourceId, "default")))(h.T)
			h.Restart()
			got := must(h.Store.UpdateTarget(h.Ctx, t.ResourceId, func(cur *vagrant.Target) error {
				cur.Project = &sdk.Ref_Project{ResourceId: p2.ResourceId}
				cur.ResourceId = id()
				cur.State, cur.Record = vagrant.Operation_HALTED, foreignAny("halted")
				return nil
			}))(h.T)
			if got.ResourceId != t.ResourceId || got.Project.ResourceId != p1.ResourceId || got.State != vagrant.Operation_HALTED ||
				!proto.Equal(got.Record, foreignAny("halted")) {
				h.T.Fatalf("after update: %v", got)
			}
			ok(h.T, h.Store.DeleteTarget(h.Ctx, t.ResourceId))
			ok(h.T, h.Store.DeleteTarget(h.Ctx, t.ResourceId))
			_, err := h.Store.GetTarget(h.Ctx, t.ResourceId)
			notFound(h.T, "deleted target", err)
		}},
	}
}
