package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// Assign blocks until a queued job can go to runner runnerID, assigns it (WAITING, with an
// ack deadline of Options.AckTimeout) and returns it. Jobs go out oldest first; a job fits
// when it targets this runner, or any runner and the runner is not by_id_only, and the
// runner has the components the job needs. The runner must have registered
// (ErrRunnerNotFound). Only ctx ends the wait.
func (q *Queue) Assign(ctx context.Context, runnerID string) (*vagrant.Job, error) {
	var byIDOnly bool
	var tokens []string
	err := q.pool.QueryRow(ctx, `SELECT by_id_only, component_tokens FROM runners WHERE id = $1`, runnerID).
		Scan(&byIDOnly, &tokens)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("runner %s: %w", runnerID, ErrRunnerNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load runner %s: %w", runnerID, err)
	}
	// Registered before the first attempt, so a job queued while it runs still wakes us.
	w := q.hub.addWaiter(runnerID, byIDOnly, tokens)
	timer := time.NewTimer(q.opts.PollInterval)
	defer timer.Stop()
	var wokenBy notification
	for {
		job, err := q.tryAssign(ctx, runnerID)
		if err != nil || job != nil {
			q.stopWaiting(w, job.GetId(), wokenBy)
			return job, err
		}
		// Nothing to claim: whatever woke us is gone.
		wokenBy = notification{}
		timer.Reset(q.opts.PollInterval)
		select {
		case <-ctx.Done():
			q.stopWaiting(w, "", wokenBy)
			return nil, ctx.Err()
		case wokenBy = <-w.wake:
		case <-timer.C:
		}
	}
}

// stopWaiting unregisters w and hands on the notifications it holds for jobs other than the
// one it claimed: each was meant to make someone look for its job.
func (q *Queue) stopWaiting(w *waiter, claimed string, wokenBy notification) {
	q.hub.removeWaiter(w)
	pending := []notification{wokenBy}
	select {
	case n := <-w.wake: // nobody sends after removeWaiter: this drains for good
		pending = append(pending, n)
	default:
	}
	for _, n := range pending {
		if n.ID != "" && n.ID != claimed {
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

// tryAssign claims one job for runnerID; nil when there is none.
func (q *Queue) tryAssign(ctx context.Context, runnerID string) (*vagrant.Job, error) {
	var job *vagrant.Job
	err := pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		r, err := scanJob(tx.QueryRow(ctx, claimSQL, runnerID, q.opts.AckTimeout.Microseconds()))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("claim a job for runner %s: %w", runnerID, err)
		}
		if job, err = r.job(); err != nil {
			return err
		}
		return q.recordJobChange(ctx, tx, vagrant.Job_QUEUED, r)
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}
