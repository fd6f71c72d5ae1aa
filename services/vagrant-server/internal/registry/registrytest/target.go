package registrytest

import (
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

// project creates a basis and a project for target behaviours.
func project(st *StoreTest, name string) *vagrant.Project {
	b := testenv.Must(st.Store.CreateBasis(st.Ctx, newBasis(name)))(st.T)
	return testenv.Must(st.Store.CreateProject(st.Ctx, newProject(b.ResourceId, name)))(st.T)
}

func targetBehaviours() []behaviour {
	return []behaviour{
		{Name: "target/round trip returns the record and configuration byte for byte", Run: func(st *StoreTest) {
			p := project(st, "dev")
			t := newTarget(p.ResourceId, "default")
			t.Uuid = "4f1c2e8a-0000-4000-8000-000000000001"
			testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(t)))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.GetTarget(st.Ctx, t.ResourceId))(st.T)
			if !proto.Equal(got.Record, t.Record) || string(got.Record.Value) != string(t.Record.Value) {
				st.T.Fatalf("record changed: %v, want %v", got.Record, t.Record)
			}
			want := proto.Clone(t).(*vagrant.Target)
			want.Project = &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			equal(st.T, "stored target", got, want)
			refs := testenv.Must(st.Store.ListTargets(st.Ctx))(st.T)
			if len(refs) != 1 {
				st.T.Fatalf("list: %v", refs)
			}
			equal(st.T, "listed ref", refs[0], &sdk.Ref_Target{ResourceId: t.ResourceId, Name: t.Name, Project: want.Project})
		}},
		{Name: "target/needs an existing project", Run: func(st *StoreTest) {
			_, err := st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(id(), "orphan")))
			precondition(st.T, "unknown project", err, "target.project")
		}},
		{Name: "target/name is unique within a project, uuid everywhere", Run: func(st *StoreTest) {
			p1, p2 := project(st, "one"), project(st, "two")
			a := newTarget(p1.ResourceId, "default")
			a.Uuid = "aaaa-1"
			testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(a)))(st.T)
			testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p2.ResourceId, "default"))))(st.T) // other project
			st.Restart()
			_, err := st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p1.ResourceId, "default")))
			precondition(st.T, "same name", err, "target.name")
			sameUUID := newTarget(p2.ResourceId, "other")
			sameUUID.Uuid = a.Uuid
			_, err = st.Store.CreateTarget(st.Ctx, registry.NewTarget(sameUUID))
			precondition(st.T, "same uuid", err, "target.uuid")
			// Targets without a uuid do not collide on it.
			testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p1.ResourceId, "no-uuid-1"))))(st.T)
			testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p1.ResourceId, "no-uuid-2"))))(st.T)
		}},
		{Name: "target/find by name, by uuid prefix", Run: func(st *StoreTest) {
			p := project(st, "dev")
			mk := func(name, uuid string) *vagrant.Target {
				t := newTarget(p.ResourceId, name)
				t.Uuid = uuid
				return testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(t)))(st.T)
			}
			web := mk("web", "7a3f")
			db := mk("db", "7a3f91")
			mk("cache", "b_1%")
			other := mk("other", "bx1z")
			st.Restart()
			equal(st.T, "by name", testenv.Must(st.Store.FindTarget(st.Ctx, registry.TargetQuery{ProjectID: p.ResourceId, Name: "db"}))(st.T), db)
			equal(st.T, "unique prefix", testenv.Must(st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "7a3f9"}))(st.T), db)
			equal(st.T, "exact uuid beats longer ones", testenv.Must(st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "7a3f"}))(st.T), web)
			_, err := st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "7a"})
			precondition(st.T, "ambiguous prefix", err, "target.uuid")
			equal(st.T, "LIKE wildcards are literal", testenv.Must(st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "bx"}))(st.T), other)
			_, err = st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "b_"}) // would match bx1z as a wildcard
			if err != nil {
				st.T.Fatalf("b_ must match only the cache target: %v", err)
			}
			_, err = st.Store.FindTarget(st.Ctx, registry.TargetQuery{UUIDPrefix: "ffff"})
			notFound(st.T, "unknown prefix", err)
			_, err = st.Store.FindTarget(st.Ctx, registry.TargetQuery{ProjectID: p.ResourceId, Name: "nope"})
			notFound(st.T, "unknown name", err)
		}},
		{Name: "target/parents and subtargets", Run: func(st *StoreTest) {
			p := project(st, "dev")
			parent := testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p.ResourceId, "host"))))(st.T)
			child := newTarget(p.ResourceId, "guest")
			child.Parent = &sdk.Ref_Target{ResourceId: parent.ResourceId}
			child = testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(child)))(st.T)
			st.Restart()
			pref := &sdk.Ref_Project{ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis}
			equal(st.T, "child's parent", testenv.Must(st.Store.GetTarget(st.Ctx, child.ResourceId))(st.T).Parent,
				&sdk.Ref_Target{ResourceId: parent.ResourceId, Name: "host", Project: pref})
			subs := testenv.Must(st.Store.GetTarget(st.Ctx, parent.ResourceId))(st.T).Subtargets
			if len(subs) != 1 {
				st.T.Fatalf("subtargets: %v", subs)
			}
			equal(st.T, "subtarget", subs[0], &sdk.Ref_Target{ResourceId: child.ResourceId, Name: "guest", Project: pref})
			_, err := st.Store.UpdateTarget(st.Ctx, parent.ResourceId, func(cur *vagrant.Target) (registry.TargetChange, error) {
				cur.Parent = &sdk.Ref_Target{ResourceId: cur.ResourceId}
				return registry.TargetChange{Target: cur}, nil
			})
			precondition(st.T, "own parent", err, "target.parent")
			testenv.OK(st.T, st.Store.DeleteTarget(st.Ctx, parent.ResourceId))
			st.Restart()
			if got := testenv.Must(st.Store.GetTarget(st.Ctx, child.ResourceId))(st.T); got.Parent != nil {
				st.T.Fatalf("deleted parent still referenced: %v", got.Parent)
			}
		}},
		{Name: "target/update keeps project and id, delete is idempotent", Run: func(st *StoreTest) {
			p1, p2 := project(st, "one"), project(st, "two")
			t := testenv.Must(st.Store.CreateTarget(st.Ctx, registry.NewTarget(newTarget(p1.ResourceId, "default"))))(st.T)
			st.Restart()
			got := testenv.Must(st.Store.UpdateTarget(st.Ctx, t.ResourceId, func(cur *vagrant.Target) (registry.TargetChange, error) {
				cur.Project = &sdk.Ref_Project{ResourceId: p2.ResourceId}
				cur.ResourceId = id()
				cur.State, cur.Record = vagrant.Operation_HALTED, foreignAny("halted")
				return registry.TargetChange{Target: cur}, nil
			}))(st.T)
			if got.ResourceId != t.ResourceId || got.Project.ResourceId != p1.ResourceId || got.State != vagrant.Operation_HALTED ||
				!proto.Equal(got.Record, foreignAny("halted")) {
				st.T.Fatalf("after update: %v", got)
			}
			testenv.OK(st.T, st.Store.DeleteTarget(st.Ctx, t.ResourceId))
			testenv.OK(st.T, st.Store.DeleteTarget(st.Ctx, t.ResourceId))
			_, err := st.Store.GetTarget(st.Ctx, t.ResourceId)
			notFound(st.T, "deleted target", err)
		}},
	}
}
