package jobqueue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// jobEvent is job.state_changed for r, which was in state prev.
func (q *Queue) jobEvent(prev vagrant.Job_State, r *jobRow) (events.Event, error) {
	ev := &eventsv1.JobStateChanged{
		JobId:           r.id,
		State:           eventsv1.JobState(r.state),
		PreviousState:   eventsv1.JobState(prev),
		AssignedRunner:  r.assignedRunner,
		TargetRunner:    r.targetRunner,
		Operation:       r.operation,
		CancelRequested: r.cancelRequested,
	}
	st, err := r.errorStatus()
	if err != nil {
		return events.Event{}, err
	}
	// The subject is the one the payload declares; free text (a runner's error message can be
	// a megabyte) is cut when the event is written (events.Outbox bounds every event).
	ev.ErrorCode, ev.ErrorMessage = st.GetCode(), st.GetMessage()
	return events.Event{Payload: ev}, nil
}

// recordJobChange adds job.state_changed for r, which was in state prev, to tx's outbox.
func (q *Queue) recordJobChange(ctx context.Context, tx pgx.Tx, prev vagrant.Job_State, r *jobRow) error {
	ev, err := q.jobEvent(prev, r)
	if err != nil {
		return err
	}
	if _, err := q.outbox.Add(ctx, tx, ev); err != nil {
		return fmt.Errorf("job %s: record state change: %w", r.id, err)
	}
	return nil
}

// recordRunnerChange adds runner.state_changed to tx's outbox.
func (q *Queue) recordRunnerChange(ctx context.Context, tx pgx.Tx, r *vagrant.Runner, online bool) error {
	ev := &eventsv1.RunnerStateChanged{
		RunnerId:   r.GetId(),
		Online:     online,
		ByIdOnly:   r.GetByIdOnly(),
		Components: componentTokens(r.GetComponents()),
	}
	if _, err := q.outbox.Add(ctx, tx, events.Event{Payload: ev}); err != nil {
		return fmt.Errorf("runner %s: record state change: %w", quoteID(r.GetId()), err)
	}
	return nil
}
