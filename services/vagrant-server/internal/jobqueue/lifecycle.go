package jobqueue

import (
	"context"
	"fmt"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
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
	return &spb.Status{Code: int32(codes.Unavailable), Message: fmt.Sprintf("runner %s stopped sending heartbeats; job canceled", runner)}
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

// Ack is runner's acknowledgement of its assignment: the job runs (RUNNING) and must
// heartbeat within Options.HeartbeatTimeout. A job that expired while waiting for the ack
// ends instead, and Ack reports a *StateError.
func (q *Queue) Ack(ctx context.Context, jobID, runner string) error {
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
	return err
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

// Heartbeat moves a running job's heartbeat deadline to Options.HeartbeatTimeout from now.
// A *StateError means the job is no longer the runner's to run (e.g. it was force-canceled):
// the runner should stop it.
func (q *Queue) Heartbeat(ctx context.Context, jobID, runner string) error {
	_, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "heartbeat", vagrant.Job_RUNNING, runner); err != nil {
			return err
		}
		deadline := now.Add(q.opts.HeartbeatTimeout)
		r.heartbeatDeadline = &deadline
		return nil
	})
	return err
}

// Complete ends runner's running job successfully with its result (nil is allowed: some
// operations have none).
func (q *Queue) Complete(ctx context.Context, jobID, runner string, result *vagrant.Job_Result) error {
	var b []byte
	if result != nil {
		var err error
		if b, err = proto.Marshal(result); err != nil {
			return fmt.Errorf("marshal job result: %w", err)
		}
	}
	_, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
		if err := heldBy(r, "complete", vagrant.Job_RUNNING, runner); err != nil {
			return err
		}
		r.result = b
		return r.finish(now, nil)
	})
	return err
}

// Fail ends runner's running job in ERROR with the error it reported. A missing or OK
// status is stored as UNKNOWN, since the job did fail.
func (q *Queue) Fail(ctx context.Context, jobID, runner string, st *spb.Status) error {
	if st == nil || st.GetCode() == int32(codes.OK) {
		msg := "runner reported an error without details"
		if st.GetMessage() != "" {
			msg = st.GetMessage()
		}
		st = &spb.Status{Code: int32(codes.Unknown), Message: msg, Details: st.GetDetails()}
	}
	_, err := q.change(ctx, jobID, func(r *jobRow, now time.Time) error {
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
