package registry

import (
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// TargetChange is what one write of a target saves: the target as it is to be stored and,
// when the write changes the target's state, the target.state_changed event it raises. A
// TargetStore writes exactly this, the event in the transaction of the write (outbox); it
// decides nothing.
type TargetChange struct {
	Target *vagrant.Target
	// Event is nil when the write leaves the target's state as it was.
	Event *eventsv1.TargetStateChanged
}

// TargetState is what target.state_changed reports: the physical state and the state of the
// machine the provider recorded in Target.record.
type TargetState struct {
	Physical    vagrant.Operation_PhysicalState
	Machine     string
	Description string
}

// StateOf reads t's state. A record that does not hold a Target.Machine (the Ruby side may
// pack other types; records are opaque to the registry) has no machine state.
func StateOf(t *vagrant.Target) TargetState {
	s := TargetState{Physical: t.GetState()}
	m := &vagrant.Target_Machine{}
	if rec := t.GetRecord(); rec != nil && rec.MessageIs(m) && rec.UnmarshalTo(m) == nil {
		s.Machine, s.Description = m.GetState().GetId(), m.GetState().GetShortDescription()
	}
	return s
}

// changed reports whether going from s to after is a state change: a new physical or machine
// state. A new description alone is not one.
func (s TargetState) changed(after TargetState) bool {
	return s.Physical != after.Physical || s.Machine != after.Machine
}

// NewTarget is the change that creates t. t.Project names the project and its basis (the
// event carries both ids); a target created with a state announces it, from the zero state.
func NewTarget(t *vagrant.Target) TargetChange {
	return TargetChange{Target: t, Event: stateChange(TargetState{}, t)}
}

// UpdatedTarget is the change that writes the fields set in fields over before (an upsert
// replaces what the client sent and keeps the rest; see overlay). The target keeps its
// resource_id and project whatever fields says: a target never moves.
func UpdatedTarget(before, fields *vagrant.Target) TargetChange {
	after := proto.CloneOf(before)
	overlay(after, fields)
	after.ResourceId, after.Project = before.GetResourceId(), proto.CloneOf(before.GetProject())
	return TargetChange{Target: after, Event: stateChange(StateOf(before), after)}
}

// stateChange is target.state_changed for t, whose state was before, or nil when t's state is
// still before's.
func stateChange(before TargetState, t *vagrant.Target) *eventsv1.TargetStateChanged {
	after := StateOf(t)
	if !before.changed(after) {
		return nil
	}
	return &eventsv1.TargetStateChanged{
		TargetId:                t.GetResourceId(),
		Name:                    t.GetName(),
		ProjectId:               t.GetProject().GetResourceId(),
		BasisId:                 t.GetProject().GetBasis().GetResourceId(),
		Provider:                t.GetProvider(),
		State:                   eventsv1.TargetState(after.Physical),
		PreviousState:           eventsv1.TargetState(before.Physical),
		MachineState:            after.Machine,
		PreviousMachineState:    before.Machine,
		MachineStateDescription: after.Description,
	}
}
