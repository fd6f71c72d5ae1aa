package jobqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// reapBatch is how many overdue jobs one reaper transaction handles.
const reapBatch = 100

// Reaper enforces the deadlines stored in the jobs table — ack timeouts, heartbeat timeouts
// and expiry — and takes runners whose replica stopped refreshing them offline. Run one per replica; they split the work (FOR UPDATE SKIP LOCKED), and since
// deadlines are rows, a restarted replica enforces the deadlines of jobs it never saw.
type Reaper struct {
	q        *Queue
	interval time.Duration
}

// NewReaper returns a Reaper for q that checks every interval (default 1s when <= 0). A
// deadline is thus enforced at most interval late.
func NewReaper(q *Queue, interval time.Duration) *Reaper {
	if interval <= 0 {
		interval = time.Second
	}
	return &Reaper{q: q, interval: interval}
}

// Reaped counts what one pass did.
type Reaped struct {
	// AckTimeouts were nacked: back to QUEUED (or ended, if canceled or expired meanwhile).
	AckTimeouts int
	// HeartbeatTimeouts ended in ERROR; their runners are told to stop.
	HeartbeatTimeouts int
	// Expired jobs ended in ERROR before any runner acknowledged them.
	Expired int
	// RunnersExpired went offline: nobody refreshed their last_seen for RunnerTimeout.
	RunnersExpired int
}

// Run reaps every interval until ctx ends; a failed pass is logged and retried at the next
// tick. It returns nil when ctx ends.
func (rp *Reaper) Run(ctx context.Context) error {
	t := time.NewTicker(rp.interval)
	defer t.Stop()
	for {
		if _, err := rp.Reap(ctx); err != nil && ctx.Err() == nil {
			rp.q.opts.Logger.WarnContext(ctx, "job queue: reaping overdue jobs failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Reap handles every job whose deadline has passed, once.
func (rp *Reaper) Reap(ctx context.Context) (Reaped, error) {
	var out Reaped
	var err error
	// Expiry first: a waiting job that both expired and missed its ack deadline ends rather
	// than going back to the queue.
	if out.Expired, err = rp.reap(ctx, `state IN (1, 2) AND expire_time <= now()`, expire); err != nil {
		return out, err
	}
	if out.AckTimeouts, err = rp.reap(ctx, `state = 2 AND ack_deadline <= now()`, requeue); err != nil {
		return out, err
	}
	if out.HeartbeatTimeouts, err = rp.reap(ctx, `state = 3 AND heartbeat_deadline <= now()`, runnerLost); err != nil {
		return out, err
	}
	out.RunnersExpired, err = rp.q.expireRunners(ctx)
	return out, err
}

// reap applies fn to the jobs matching where, a batch per transaction, skipping jobs
// another replica is handling.
func (rp *Reaper) reap(ctx context.Context, where string, fn func(*jobRow, time.Time) error) (int, error) {
	total := 0
	for {
		n := 0
		err := pg.InTx(ctx, rp.q.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT `+jobColumns+`, now() FROM jobs WHERE `+where+`
				ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, reapBatch)
			if err != nil {
				return err
			}
			var due []*jobRow
			var now time.Time
			for rows.Next() {
				r, err := scanJob(rows, &now)
				if err != nil {
					rows.Close()
					return err
				}
				due = append(due, r)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			for _, r := range due {
				if err := rp.q.apply(ctx, tx, r, now, fn); err != nil {
					return err
				}
			}
			n = len(due)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("reap jobs where %s: %w", where, err)
		}
		total += n
		if n < reapBatch {
			return total, nil
		}
	}
}

// expire ends a job nobody acknowledged in time; a runner holding it is told to drop it.
func expire(r *jobRow, now time.Time) error {
	if r.state == vagrant.Job_WAITING {
		forceCancel(r, now)
	}
	return r.finish(now, statusExpired())
}

// runnerLost ends a running job whose runner stopped heartbeating, and tells that runner to
// stop it should it still be alive.
func runnerLost(r *jobRow, now time.Time) error {
	forceCancel(r, now)
	return r.finish(now, statusRunnerLost(r.assignedRunner))
}

func forceCancel(r *jobRow, now time.Time) {
	if r.cancelTime == nil {
		r.cancelTime = &now
	}
	r.cancelRequested, r.cancelForced = true, true
}
