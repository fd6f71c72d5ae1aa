package store_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
)

// A target's state changes — its physical state, or the machine state its provider records
// in Target.record — write target.state_changed with the change; other updates do not.
func TestTargetStateChangesWriteEvents(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := service.OpenPostgres(ctx, testenv.DB(t).URL, store.Schema, store.Migrations, jobqueue.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	defer pool.Close()
	reg := registry.NewService(st, registry.Options{})
	if _, err := reg.UpsertBasis(ctx, &vagrant.Basis{Name: "dev", Path: "/dev"}); err != nil {
		t.Fatal(err)
	}
	project := &sdk.Ref_Project{Name: "web", Basis: &sdk.Ref_Basis{Name: "dev"}}
	if _, err := reg.UpsertProject(ctx, &vagrant.Project{Name: "web", Path: "/web", Basis: project.Basis}); err != nil {
		t.Fatal(err)
	}
	upsert := func(tg *vagrant.Target) *vagrant.Target {
		t.Helper()
		tg.Project = project
		got, err := reg.UpsertTarget(ctx, nil, tg)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	machine := func(state string) *anypb.Any {
		a, err := anypb.New(&vagrant.Target_Machine{Id: "ns-1", State: &sdk.Args_Target_Machine_State{Id: state, ShortDescription: state + "!"}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	vm := upsert(&vagrant.Target{Name: "vm", Provider: "netns"})                                                // no state: no event
	upsert(&vagrant.Target{Name: "vm", State: vagrant.Operation_PENDING})                                       // UNKNOWN → PENDING
	upsert(&vagrant.Target{Name: "vm", State: vagrant.Operation_CREATED, Record: machine("running")})           // both change
	upsert(&vagrant.Target{Name: "vm", Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"a": "b"}}}) // nothing
	upsert(&vagrant.Target{Name: "vm", Record: machine("stopped")})                                             // machine only
	upsert(&vagrant.Target{Name: "other", State: vagrant.Operation_NOT_CREATED})                                // created with a state

	rows, err := pool.Query(ctx, `SELECT payload FROM outbox WHERE subject = $1 ORDER BY id`, events.SubjectOf(&eventsv1.TargetStateChanged{}))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []*eventsv1.TargetStateChanged
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		ev := &eventsv1.TargetStateChanged{}
		if err := proto.Unmarshal(b, ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	base := func(ev *eventsv1.TargetStateChanged) *eventsv1.TargetStateChanged {
		ev.TargetId, ev.Name, ev.Provider = vm.GetResourceId(), "vm", "netns"
		ev.ProjectId, ev.BasisId = vm.GetProject().GetResourceId(), vm.GetProject().GetBasis().GetResourceId()
		return ev
	}
	want := []*eventsv1.TargetStateChanged{
		base(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_PENDING}),
		base(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_CREATED, PreviousState: eventsv1.TargetState_TARGET_STATE_PENDING,
			MachineState: "running", MachineStateDescription: "running!"}),
		base(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_CREATED, PreviousState: eventsv1.TargetState_TARGET_STATE_CREATED,
			MachineState: "stopped", PreviousMachineState: "running", MachineStateDescription: "stopped!"}),
	}
	if len(got) != 4 {
		t.Fatalf("%d events, want 4: %v", len(got), got)
	}
	for i, w := range want {
		if !proto.Equal(got[i], w) {
			t.Errorf("event %d = %v, want %v", i, got[i], w)
		}
	}
	if last := got[3]; last.GetName() != "other" || last.GetState() != eventsv1.TargetState_TARGET_STATE_NOT_CREATED ||
		last.GetPreviousState() != eventsv1.TargetState_TARGET_STATE_UNSPECIFIED {
		t.Errorf("event of a target created with a state: %v", last)
	}
}
