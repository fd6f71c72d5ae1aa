package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// jobColumns is what every query that loads a job selects, in jobRow.scan's order.
const jobColumns = `id, spec, operation, target_runner, state, assigned_runner, queue_time,
	assign_time, ack_time, complete_time, cancel_time, expire_time, ack_deadline,
	heartbeat_deadline, cancel_requested, cancel_forced, error, result`

// jobRow is one row of jobs: the stored spec plus everything the server decided.
type jobRow struct {
	id                string
	spec              []byte
	operation         string
	targetRunner      string
	state             vagrant.Job_State
	assignedRunner    string
	queueTime         time.Time
	assignTime        *time.Time
	ackTime           *time.Time
	completeTime      *time.Time
	cancelTime        *time.Time
	expireTime        *time.Time
	ackDeadline       *time.Time
	heartbeatDeadline *time.Time
	cancelRequested   bool
	cancelForced      bool
	errStatus         []byte // google.rpc.Status
	result            []byte // hashicorp.vagrant.Job.Result
}

// scanJob scans jobColumns (plus extra destinations after them).
func scanJob(row pgx.Row, extra ...any) (*jobRow, error) {
	var r jobRow
	var state int16
	dest := append([]any{&r.id, &r.spec, &r.operation, &r.targetRunner, &state, &r.assignedRunner,
		&r.queueTime, &r.assignTime, &r.ackTime, &r.completeTime, &r.cancelTime, &r.expireTime,
		&r.ackDeadline, &r.heartbeatDeadline, &r.cancelRequested, &r.cancelForced, &r.errStatus,
		&r.result}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	r.state = vagrant.Job_State(state)
	return &r, nil
}

// lockJob loads job id for update in tx, with the database's transaction time: every
// timestamp and deadline comes from the database clock, so replicas with skewed clocks agree.
func lockJob(ctx context.Context, tx pgx.Tx, id string) (*jobRow, time.Time, error) {
	var now time.Time
	r, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+`, now() FROM jobs WHERE id = $1 FOR UPDATE`, id), &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, now, fmt.Errorf("job %s: %w", quoteID(id), ErrJobNotFound)
	}
	if err != nil {
		return nil, now, fmt.Errorf("load job %s: %w", quoteID(id), err)
	}
	return r, now, nil
}

// update writes r's mutable columns.
func (r *jobRow) update(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `UPDATE jobs SET state = $2, assigned_runner = $3, assign_time = $4,
		ack_time = $5, complete_time = $6, cancel_time = $7, ack_deadline = $8,
		heartbeat_deadline = $9, cancel_requested = $10, cancel_forced = $11, error = $12,
		result = $13 WHERE id = $1`,
		r.id, int16(r.state), r.assignedRunner, r.assignTime, r.ackTime, r.completeTime,
		r.cancelTime, r.ackDeadline, r.heartbeatDeadline, r.cancelRequested, r.cancelForced,
		r.errStatus, r.result)
	if err != nil {
		return fmt.Errorf("update job %s: %w", r.id, err)
	}
	return nil
}

// finish ends the job in ERROR (st != nil) or SUCCESS at now; no deadline applies any more.
func (r *jobRow) finish(now time.Time, st *spb.Status) error {
	r.state = vagrant.Job_SUCCESS
	if st != nil {
		b, err := proto.Marshal(st)
		if err != nil {
			return fmt.Errorf("job %s: marshal error status: %w", r.id, err)
		}
		r.state, r.errStatus = vagrant.Job_ERROR, b
	}
	r.completeTime = &now
	r.ackDeadline, r.heartbeatDeadline = nil, nil
	return nil
}

// errorStatus decodes the stored error; nil when there is none.
func (r *jobRow) errorStatus() (*spb.Status, error) {
	if r.errStatus == nil {
		return nil, nil
	}
	st := &spb.Status{}
	if err := proto.Unmarshal(r.errStatus, st); err != nil {
		return nil, fmt.Errorf("job %s: decode stored error: %w", r.id, err)
	}
	return st, nil
}

// job rebuilds the full hashicorp.vagrant.Job: the spec as queued plus the server fields.
func (r *jobRow) job() (*vagrant.Job, error) {
	j := &vagrant.Job{}
	if err := proto.Unmarshal(r.spec, j); err != nil {
		return nil, fmt.Errorf("job %s: decode stored job: %w", r.id, err)
	}
	j.Id, j.State = r.id, r.state
	if r.assignedRunner != "" {
		j.AssignedRunner = &vagrant.Ref_RunnerId{Id: r.assignedRunner}
	}
	j.QueueTime = timestamppb.New(r.queueTime)
	j.AssignTime, j.AckTime = timestamp(r.assignTime), timestamp(r.ackTime)
	j.CompleteTime, j.CancelTime = timestamp(r.completeTime), timestamp(r.cancelTime)
	j.ExpireTime = timestamp(r.expireTime)
	st, err := r.errorStatus()
	if err != nil {
		return nil, err
	}
	j.Error = st
	if r.result != nil {
		j.Result = &vagrant.Job_Result{}
		if err := proto.Unmarshal(r.result, j.Result); err != nil {
			return nil, fmt.Errorf("job %s: decode stored result: %w", r.id, err)
		}
	}
	return j, nil
}

func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

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
