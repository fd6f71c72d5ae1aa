package jobqueue

import (
	"context"
	"fmt"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// The errors a job ends with when the runner did not report one itself.
func statusCanceled(forced bool) *spb.Status {
	if forced {
		return &spb.Status{Code: int32(codes.Canceled), Message: "job canceled (forced)"}
	}
	return &spb.Status{Code: int32(codes.Canceled), Message: "job canceled"}
}

func statusExpired() *spb.Status {
	return &spb.Status{Code: int32(codes.DeadlineExceeded), Message: "job expired: no runner acknowledged it within its expires_in"}
}

func statusRunnerLost(runner string) *spb.Status {
	return &spb.Status{Code: int32(codes.Unavailable), Message: fmt.Sprintf("runner %s stopped sending heartbeats; job canceled", quoteID(runner))}
}

// heldBy refuses op unless r is in state want and assigned to runner: a runner whose
// assignment timed out (the job went to someone else) must not act on it.
func heldBy(r *jobRow, op string, want vagrant.Job_State, runner string) error {
	if r.state != want {
		return &StateError{JobID: r.id, Op: op, State: r.state}
	}
	if r.assignedRunner != runner {
		return &StateError{JobID: r.id, Op: op, State: r.state, Runner: r.assignedRunner}
	}
	return nil
}

func expired(r *jobRow, now time.Time) bool {
	return r.expireTime != nil && !now.Before(*r.expireTime)
}

// ackSQL is the ack of a job held and not expired: the common case, in the group commit.
const ackSQL = `UPDATE jobs SET state = 3, ack_time = now(), ack_deadline = NULL,
		heartbeat_deadline = now() + $3::bigint * interval '1 microsecond'
	WHERE id = $1 AND state = 2 AND assigned_runner = $2 AND (expire_time IS NULL OR expire_time > now())
	RETURNING ` + jobColumns

// Ack is runner's acknowledgement of its assignment: the job runs (RUNNING) and must
// heartbeat within Options.HeartbeatTimeout. It returns the job as acknowledged: a cancel
// requested before the ack (cancel_time is set) is for the caller to pass on to the runner. A
// job that expired while waiting for the ack ends instead, and Ack reports a *StateError.
func (q *Queue) Ack(ctx context.Context, jobID, runner string) (*vagrant.Job, error) {
	rows, err := q.commitChange(ctx, vagrant.Job_WAITING, nil, ackSQL, jobID, runner, q.opts.HeartbeatTimeout.Microseconds())
	if err != nil {
		return nil, err
	}
	if len(rows) == 1 {
		return rows[0].job()
	}
	// Refused, or the job expired waiting for the ack: decide with the job locked.
	var expiredNow bool
	r, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "ack", vagrant.Job_WAITING, runner); err != nil {
			return err
		}
		if expiredNow = expired(r, now); expiredNow {
			return r.finish(now, statusExpired())
		}
		deadline := now.Add(q.opts.HeartbeatTimeout)
		r.state, r.ackTime, r.ackDeadline, r.heartbeatDeadline = vagrant.Job_RUNNING, &now, nil, &deadline
		return nil
	})
	if err == nil && expiredNow {
		err = &StateError{JobID: jobID, Op: "ack", State: r.state}
	}
	if err != nil {
		return nil, err
	}
	return r.job()
}

// commitChange runs stmts and then sql — an update of job $1 by runner $2 that returns the
// row when the job was in state prev and the change applies — in the next group commit,
// recording the job's event when its state changed. No row means the change did not apply: the caller decides why
// with the job locked (the slow path).
func (q *Queue) commitChange(ctx context.Context, prev vagrant.Job_State, stmts []Stmt, sql string, args ...any) ([]*jobRow, error) {
	var rows []*jobRow
	steps := make([]step, 0, len(stmts)+1)
	for _, s := range stmts {
		steps = append(steps, step{sql: s.SQL, args: s.Args})
	}
	w := &write{
		steps: append(steps, step{sql: sql, args: args, scan: scanJobRows(&rows)}),
		changes: func() []jobChange {
			if len(rows) == 0 || rows[0].state == prev {
				return nil
			}
			return []jobChange{{prev: prev, row: rows[0]}}
		},
		undo: func() { rows = nil },
	}
	if err := q.commit(ctx, w); err != nil {
		return nil, fmt.Errorf("job %s: %w", quoteID(fmt.Sprint(args[0])), err)
	}
	return rows, nil
}

// Nack is runner's refusal of its assignment (or its silence: the reaper nacks at the ack
// deadline). The job goes back to the queue for any fitting runner, unless its cancellation
// was requested or it expired meanwhile: then it ends in ERROR.
func (q *Queue) Nack(ctx context.Context, jobID, runner string) error {
	_, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "nack", vagrant.Job_WAITING, runner); err != nil {
			return err
		}
		return requeue(r, now)
	})
	return err
}

// requeue returns a WAITING job to QUEUED, or ends it when canceled or expired.
func requeue(r *jobRow, now time.Time) error {
	switch {
	case r.cancelRequested:
		return r.finish(now, statusCanceled(r.cancelForced))
	case expired(r, now):
		return r.finish(now, statusExpired())
	}
	r.state, r.assignedRunner, r.assignTime, r.ackDeadline = vagrant.Job_QUEUED, "", nil, nil
	return nil
}

// heartbeatSQL moves the deadline of a job its runner still holds.
const heartbeatSQL = `UPDATE jobs SET heartbeat_deadline = now() + $3::bigint * interval '1 microsecond'
	WHERE id = $1 AND state = 3 AND assigned_runner = $2
	RETURNING ` + jobColumns

// Heartbeat moves a running job's heartbeat deadline to Options.HeartbeatTimeout from now.
// A *StateError means the job is no longer the runner's to run (e.g. it was force-canceled):
// the runner should stop it.
func (q *Queue) Heartbeat(ctx context.Context, jobID, runner string) error {
	rows, err := q.commitChange(ctx, vagrant.Job_RUNNING, nil, heartbeatSQL, jobID, runner, q.opts.HeartbeatTimeout.Microseconds())
	if err != nil || len(rows) == 1 {
		return err
	}
	_, err = q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "heartbeat", vagrant.Job_RUNNING, runner); err != nil {
			return err
		}
		deadline := now.Add(q.opts.HeartbeatTimeout)
		r.heartbeatDeadline = &deadline
		return nil
	})
	return err
}

// finishSQL ends a job its runner holds: SUCCESS with a result or ERROR with a status.
const finishSQL = `UPDATE jobs SET state = $3, result = $4, error = $5, complete_time = now(),
		ack_deadline = NULL, heartbeat_deadline = NULL
	WHERE id = $1 AND state = 3 AND assigned_runner = $2
	RETURNING ` + jobColumns

// Complete ends runner's running job successfully with its result (nil is allowed: some
// operations have none). stmts — the job's last output — are committed with it, and also
// when the job is no longer the runner's to complete.
func (q *Queue) Complete(ctx context.Context, jobID, runner string, result *vagrant.Job_Result, stmts ...Stmt) error {
	var b []byte
	if result != nil {
		var err error
		if b, err = proto.Marshal(result); err != nil {
			return fmt.Errorf("marshal job result: %w", err)
		}
	}
	rows, err := q.commitChange(ctx, vagrant.Job_RUNNING, stmts, finishSQL, jobID, runner, int16(vagrant.Job_SUCCESS), b, []byte(nil))
	if err != nil || len(rows) == 1 {
		return err
	}
	_, err = q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "complete", vagrant.Job_RUNNING, runner); err != nil {
			return err
		}
		r.result = b
		return r.finish(now, nil)
	})
	return err
}

// Fail ends runner's running job in ERROR with the error it reported. A missing or OK
// status is stored as UNKNOWN, since the job did fail. stmts are committed as Complete's.
func (q *Queue) Fail(ctx context.Context, jobID, runner string, st *spb.Status, stmts ...Stmt) error {
	if st == nil || st.GetCode() == int32(codes.OK) {
		msg := "runner reported an error without details"
		if st.GetMessage() != "" {
			msg = st.GetMessage()
		}
		st = &spb.Status{Code: int32(codes.Unknown), Message: msg, Details: st.GetDetails()}
	}
	if len(st.GetMessage()) > input.MaxText {
		// Kept and returned by GetJob on the runner's behalf: bounded like any free text.
		st = &spb.Status{Code: st.GetCode(), Message: input.Truncate(st.GetMessage(), input.MaxText), Details: st.GetDetails()}
	}
	b, err := proto.Marshal(st)
	if err != nil {
		return fmt.Errorf("job %s: marshal error status: %w", quoteID(jobID), err)
	}
	rows, err := q.commitChange(ctx, vagrant.Job_RUNNING, stmts, finishSQL, jobID, runner, int16(vagrant.Job_ERROR), []byte(nil), b)
	if err != nil || len(rows) == 1 {
		return err
	}
	_, err = q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "fail", vagrant.Job_RUNNING, runner); err != nil {
			return err
		}
		return r.finish(now, st)
	})
	return err
}

// Cancel cancels a job. QUEUED: it ends at once in ERROR (CANCELED). WAITING or RUNNING: the
// request is recorded and the runner's stream is told (see Watch); the job ends when the
// runner reports, or at once with force. A finished job, or one already being canceled
// without force, is left alone.
func (q *Queue) Cancel(ctx context.Context, jobID string, force bool) error {
	_, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		switch r.state {
		case vagrant.Job_SUCCESS, vagrant.Job_ERROR:
			return errUnchanged
		case vagrant.Job_WAITING, vagrant.Job_RUNNING:
			if r.cancelRequested && !force {
				return errUnchanged
			}
		}
		if r.cancelTime == nil {
			r.cancelTime = &now
		}
		r.cancelRequested = true
		if r.state == vagrant.Job_QUEUED || force {
			r.cancelForced = force
			return r.finish(now, statusCanceled(force))
		}
		return nil
	})
	return err
}
