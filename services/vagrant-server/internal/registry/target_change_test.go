package registry_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

// machine is a Target.record holding a Target.Machine in state.
func machine(t *testing.T, state string) *anypb.Any {
	t.Helper()
	a, err := anypb.New(&vagrant.Target_Machine{Id: "ns-1", State: &sdk.Args_Target_Machine_State{Id: state, ShortDescription: state + "!"}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// stored is a target as the store hands it to an update: in project P of basis B.
func stored(state vagrant.Operation_PhysicalState, record *anypb.Any) *vagrant.Target {
	return &vagrant.Target{ResourceId: "T", Name: "vm", Provider: "netns", State: state, Record: record,
		Project: &sdk.Ref_Project{ResourceId: "P", Name: "web", Basis: &sdk.Ref_Basis{ResourceId: "B"}}}
}

// event is target.state_changed of stored's target with the states in ev filled in.
func event(ev *eventsv1.TargetStateChanged) *eventsv1.TargetStateChanged {
	ev.TargetId, ev.Name, ev.Provider, ev.ProjectId, ev.BasisId = "T", "vm", "netns", "P", "B"
	return ev
}

// A target's state is its physical state and the machine state its record holds; a change of
// either raises target.state_changed with before and after, anything else raises nothing.
func TestUpdatedTargetRaisesAStateChangeOnlyWhenTheStateChanges(t *testing.T) {
	symbol := &anypb.Any{TypeUrl: "type.googleapis.com/hashicorp.vagrant.sdk.Args.Symbol", Value: []byte{0x0a, 1, 'x'}}
	for _, tc := range []struct {
		name   string
		before *vagrant.Target
		fields *vagrant.Target
		want   *eventsv1.TargetStateChanged // nil: no event
	}{
		{"metadata only", stored(vagrant.Operation_CREATED, machine(t, "running")),
			&vagrant.Target{Metadata: &sdk.Args_MetadataSet{Metadata: map[string]string{"a": "b"}}}, nil},
		{"the same state again", stored(vagrant.Operation_CREATED, machine(t, "running")),
			&vagrant.Target{State: vagrant.Operation_CREATED, Record: machine(t, "running")}, nil},
		{"physical state", stored(vagrant.Operation_UNKNOWN, nil), &vagrant.Target{State: vagrant.Operation_PENDING},
			event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_PENDING})},
		{"both", stored(vagrant.Operation_PENDING, nil), &vagrant.Target{State: vagrant.Operation_CREATED, Record: machine(t, "running")},
			event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_CREATED, PreviousState: eventsv1.TargetState_TARGET_STATE_PENDING,
				MachineState: "running", MachineStateDescription: "running!"})},
		{"machine state only", stored(vagrant.Operation_CREATED, machine(t, "running")), &vagrant.Target{Record: machine(t, "stopped")},
			event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_CREATED, PreviousState: eventsv1.TargetState_TARGET_STATE_CREATED,
				MachineState: "stopped", PreviousMachineState: "running", MachineStateDescription: "stopped!"})},
		{"a record of another type has no machine state", stored(vagrant.Operation_CREATED, machine(t, "running")), &vagrant.Target{Record: symbol},
			event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_CREATED, PreviousState: eventsv1.TargetState_TARGET_STATE_CREATED,
				PreviousMachineState: "running"})},
		{"a new name is reported with the change", stored(vagrant.Operation_CREATED, nil), &vagrant.Target{Name: "db", State: vagrant.Operation_HALTED},
			func() *eventsv1.TargetStateChanged {
				ev := event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_HALTED, PreviousState: eventsv1.TargetState_TARGET_STATE_CREATED})
				ev.Name = "db"
				return ev
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.CloneOf(tc.before)
			c := registry.UpdatedTarget(tc.before, tc.fields)
			if !proto.Equal(c.Event, tc.want) {
				t.Fatalf("event = %v, want %v", c.Event, tc.want)
			}
			if !proto.Equal(tc.before, before) {
				t.Fatalf("the update changed what the store loaded: %v", tc.before)
			}
		})
	}
}

// A description is not a state: the machine's short description alone changing raises nothing.
func TestADescriptionAloneIsNoStateChange(t *testing.T) {
	rec, err := anypb.New(&vagrant.Target_Machine{Id: "ns-1", State: &sdk.Args_Target_Machine_State{Id: "running", ShortDescription: "up since noon"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := registry.UpdatedTarget(stored(vagrant.Operation_CREATED, machine(t, "running")), &vagrant.Target{Record: rec}); c.Event != nil {
		t.Fatalf("event %v for a new description", c.Event)
	}
}

// An update writes the fields it sets over the stored target and keeps the rest; the target
// keeps its id and project whatever the fields say.
func TestUpdatedTargetKeepsIdentityAndUnsetFields(t *testing.T) {
	before := stored(vagrant.Operation_CREATED, machine(t, "running"))
	before.Uuid = "u-1"
	c := registry.UpdatedTarget(before, &vagrant.Target{ResourceId: "other", Provider: "docker",
		Project: &sdk.Ref_Project{ResourceId: "elsewhere"}})
	want := proto.CloneOf(before)
	want.Provider = "docker"
	if !proto.Equal(c.Target, want) {
		t.Fatalf("target to store = %v, want %v", c.Target, want)
	}
}

// A target created with a state announces it, from the zero state; one created without a
// state announces nothing.
func TestNewTarget(t *testing.T) {
	if c := registry.NewTarget(stored(vagrant.Operation_UNKNOWN, nil)); c.Event != nil {
		t.Fatalf("event %v for a target created without a state", c.Event)
	}
	c := registry.NewTarget(stored(vagrant.Operation_NOT_CREATED, machine(t, "not_created")))
	want := event(&eventsv1.TargetStateChanged{State: eventsv1.TargetState_TARGET_STATE_NOT_CREATED,
		MachineState: "not_created", MachineStateDescription: "not_created!"})
	if !proto.Equal(c.Event, want) {
		t.Fatalf("event = %v, want %v", c.Event, want)
	}
}
