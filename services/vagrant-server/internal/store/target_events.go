package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// targetState is what target.state_changed reports: the physical state and the state of the
// machine the provider recorded in Target.record.
type targetState struct {
	physical    vagrant.Operation_PhysicalState
	machine     string
	description string
}

// stateOf reads t's state. A record that does not hold a Target.Machine (the Ruby side may
// pack other types; records are opaque to the registry) has no machine state.
func stateOf(t *vagrant.Target) targetState {
	s := targetState{physical: t.GetState()}
	m := &vagrant.Target_Machine{}
	if rec := t.GetRecord(); rec != nil && rec.MessageIs(m) && rec.UnmarshalTo(m) == nil {
		s.machine, s.description = m.GetState().GetId(), m.GetState().GetShortDescription()
	}
	return s
}

// recordTargetChange writes target.state_changed to tx's outbox when t's state differs from
// before (the zero state for a new target). A new description alone is not a change.
func recordTargetChange(ctx context.Context, tx pgx.Tx, before targetState, t *vagrant.Target) error {
	after := stateOf(t)
	if after.physical == before.physical && after.machine == before.machine {
		return nil
	}
	ev := &eventsv1.TargetStateChanged{
		TargetId:                t.GetResourceId(),
		Name:                    t.GetName(),
		ProjectId:               t.GetProject().GetResourceId(),
		BasisId:                 t.GetProject().GetBasis().GetResourceId(),
		Provider:                t.GetProvider(),
		State:                   eventsv1.TargetState(after.physical),
		PreviousState:           eventsv1.TargetState(before.physical),
		MachineState:            after.machine,
		PreviousMachineState:    before.machine,
		MachineStateDescription: after.description,
	}
	if _, err := (events.Outbox{}).Add(ctx, tx, events.Event{Payload: ev}); err != nil {
		return fmt.Errorf("target %s: record state change: %w", t.GetResourceId(), err)
	}
	return nil
}
