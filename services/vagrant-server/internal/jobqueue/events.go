package jobqueue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Subjects of the events the queue writes to the outbox (see
// proto/plinth/events/v1/subjects.proto).
const (
	SubjectJobStateChanged    = "plinth.vagrant.job.state_changed"
	SubjectRunnerStateChanged = "plinth.vagrant.runner.state_changed"
)

// recordJobChange adds job.state_changed for r, which was in state prev, to tx's outbox.
func (q *Queue) recordJobChange(ctx context.Context, tx pgx.Tx, prev vagrant.Job_State, r *jobRow) error {
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
		return err
	}
	ev.ErrorCode, ev.ErrorMessage = st.GetCode(), st.GetMessage()
	if _, err := q.outbox.Add(ctx, tx, events.Event{Subject: SubjectJobStateChanged, Payload: ev}); err != nil {
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
	if _, err := q.outbox.Add(ctx, tx, events.Event{Subject: SubjectRunnerStateChanged, Payload: ev}); err != nil {
		return fmt.Errorf("runner %s: record state change: %w", r.GetId(), err)
	}
	return nil
}
