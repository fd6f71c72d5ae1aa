package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Assign blocks until a queued job can go to runner runnerID, assigns it (WAITING, with an
// ack deadline of Options.AckTimeout) and returns it. Jobs go out oldest first; a job fits
// when it targets this runner, or any runner and the runner is not by_id_only, and the
// runner has the components the job needs. The runner must have registered
// (ErrRunnerNotFound). Only ctx ends the wait; a job assigned as ctx ends is still returned,
// and the caller gives it back (Nack) if it cannot deliver it.
func (q *Queue) Assign(ctx context.Context, runnerID string) (*vagrant.Job, error) {
	// Registered before the first claim, so a job queued while it runs still wakes us.
	w := q.hub.addWaiter(runnerID)
	timer := time.NewTimer(q.opts.PollInterval)
	defer timer.Stop()
	var wokenBy notification
	var reg *registration
	for {
		job, err := q.claim(ctx, runnerID)
		if err == nil && job == nil && reg == nil {
			// Waiting needs what the runner can take (a claim implies it registered).
			reg, err = q.registration(ctx, runnerID)
		}
		if err != nil || job != nil {
			q.stopWaiting(w, job.GetId(), wokenBy)
			return job, err
		}
		// Nothing to claim: the job that woke us is gone — unless it was never ours to take (we
		// were woken before our registration was known), then someone else must look for it.
		// Wait, as a runner a job queued on this replica can be handed to directly.
		q.hub.goIdle(w, reg.byIDOnly, reg.tokens, wokenBy)
		wokenBy = notification{}
		timer.Reset(q.opts.PollInterval)
		select {
		case <-ctx.Done():
			if q.hub.removeWaiter(w) {
				if job := <-w.assigned; job != nil {
					q.stopWaiting(w, job.GetId(), wokenBy)
					return job, nil
				}
			}
			q.stopWaiting(w, "", wokenBy)
			return nil, ctx.Err()
		case job := <-w.assigned:
			if job != nil {
				q.stopWaiting(w, job.GetId(), wokenBy)
				return job, nil
			}
			q.hub.startClaiming(w) // its commit failed: look again
			continue
		case wokenBy = <-w.wake:
		case <-timer.C:
		}
		if q.hub.startClaiming(w) {
			if job := <-w.assigned; job != nil {
				q.stopWaiting(w, job.GetId(), wokenBy)
				return job, nil
			}
		}
	}
}

// stopWaiting unregisters w and hands on the notifications it holds for jobs other than the
// one it got: each was meant to make someone look for its job.
func (q *Queue) stopWaiting(w *waiter, got string, wokenBy notification) {
	q.hub.removeWaiter(w)
	pending := []notification{wokenBy}
	select {
	case n := <-w.wake: // nobody sends after removeWaiter: this drains for good
		pending = append(pending, n)
	default:
	}
	for _, n := range pending {
		if n.ID != "" && n.ID != got {
			q.hub.handOff(n)
		}
	}
}

// claimSQL assigns the oldest queued job runner $1 can take; several replicas run it at once
// safely: SKIP LOCKED makes each claim a different job. Expired jobs are never handed out,
// whether or not the reaper has ended them yet.
const claimSQL = `WITH r AS (
		SELECT id, by_id_only, component_tokens FROM runners WHERE id = $1
	), next AS (
		SELECT j.id AS claim_id FROM jobs j, r
		WHERE j.state = 1
		  AND (j.target_runner = r.id OR (j.target_runner = '' AND NOT r.by_id_only))
		  AND (cardinality(r.component_tokens) = 0 OR j.required_components <@ r.component_tokens)
		  AND (j.expire_time IS NULL OR j.expire_time > now())
		ORDER BY j.seq
		LIMIT 1
		FOR UPDATE OF j SKIP LOCKED
	)
	UPDATE jobs SET state = 2, assigned_runner = $1, assign_time = now(),
		ack_deadline = now() + $2::bigint * interval '1 microsecond'
	FROM next WHERE jobs.id = next.claim_id
	RETURNING ` + jobColumns

// registration is what a waiting Assign needs to know about its runner.
type registration struct {
	byIDOnly bool
	tokens   []string
}

// registration reads runnerID's; ErrRunnerNotFound when it never registered.
func (q *Queue) registration(ctx context.Context, runnerID string) (*registration, error) {
	reg := &registration{}
	err := q.pool.QueryRow(ctx, `SELECT by_id_only, component_tokens FROM runners WHERE id = $1`, runnerID).
		Scan(&reg.byIDOnly, &reg.tokens)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("runner %s: %w", quoteID(runnerID), ErrRunnerNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load runner %s: %w", quoteID(runnerID), err)
	}
	return reg, nil
}

// claim assigns one job to runnerID in the next group commit; nil when there is none (or the
// runner never registered).
func (q *Queue) claim(ctx context.Context, runnerID string) (*vagrant.Job, error) {
	var rows []*jobRow
	w := &write{
		steps: []step{{sql: claimSQL, args: []any{runnerID, q.opts.AckTimeout.Microseconds()}, scan: scanJobRows(&rows)}},
		changes: func() []jobChange {
			if len(rows) == 0 {
				return nil
			}
			return []jobChange{{prev: vagrant.Job_QUEUED, row: rows[0]}}
		},
		undo: func() { rows = nil },
	}
	if err := q.commit(ctx, w); err != nil {
		return nil, fmt.Errorf("claim a job for runner %s: %w", quoteID(runnerID), err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].job()
}
