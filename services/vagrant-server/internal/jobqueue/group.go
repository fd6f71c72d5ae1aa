package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Group commit. A durable queue is bound by its commits: each waits for a WAL flush. So the
// hot changes — queueing, claiming, acknowledging, finishing and heartbeating a job — are
// writes handed to a committer, and every write that arrives while a commit is in flight
// joins the next one: one transaction (two round trips) and one WAL flush for all of them,
// with their outbox events in one insert. A lone write waits for nothing but its own commit,
// so idle latency does not grow; under load the groups grow instead of the queue of commits.

// maxGroup bounds the writes one transaction carries.
const maxGroup = 256

// committers is how many groups may commit at once: while one waits for its WAL flush, the
// next collects and commits, and Postgres flushes both together.
const committers = 2

// Stmt is a statement a caller adds to a job change's transaction, e.g. the last output of a
// job, written in the commit that ends it.
type Stmt struct {
	SQL  string
	Args []any
}

// step is one statement of a write; scan reads its rows (nil: the result is not needed).
type step struct {
	sql  string
	args []any
	scan func(pgx.Rows) error
}

// jobChange is one job.state_changed event: the job as r is now, having been in prev.
type jobChange struct {
	prev vagrant.Job_State
	row  *jobRow
}

// write is one change waiting for a group commit.
type write struct {
	ctx context.Context // the request's: its trace context goes with the events
	// locks are advisory lock keys the write's statements need held (pg_advisory_xact_lock):
	// the group takes them all first, sorted and once each, so two groups holding writes
	// of the same owners wait for each other instead of deadlocking.
	locks []string
	steps []step
	// changes lists the events to record, once the steps' rows were read.
	changes func() []jobChange
	// undo resets what the scans set, before the write is retried alone.
	undo func()
	err  error
	done chan struct{}
}

var errClosed = errors.New("jobqueue: the queue is closed")

// commit hands w to the committers and waits for its outcome. Once handed over the write is
// committed whatever becomes of ctx: the caller must learn what happened (a claimed job
// must be given back, not forgotten).
func (q *Queue) commit(ctx context.Context, w *write) error {
	w.ctx, w.done = ctx, make(chan struct{})
	select {
	case q.writes <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-q.closing:
		return errClosed
	}
	<-w.done
	return w.err
}

// commitLoop commits groups of writes until the queue closes.
func (q *Queue) commitLoop(ctx context.Context) {
	for {
		var group []*write
		select {
		case w := <-q.writes:
			group = append(group, w)
		case <-ctx.Done():
			return
		}
	collect:
		for len(group) < maxGroup {
			select {
			case w := <-q.writes:
				group = append(group, w)
			default:
				break collect
			}
		}
		q.commitGroup(ctx, group)
	}
}

// commitGroup commits group; should a statement fail, every write is retried alone so the
// failure stays with the write that caused it.
func (q *Queue) commitGroup(ctx context.Context, group []*write) {
	err, beforeCommit := q.runGroup(ctx, group)
	if err != nil && beforeCommit && len(group) > 1 {
		for _, w := range group {
			if w.undo != nil {
				w.undo()
			}
			w.err, _ = q.runGroup(ctx, []*write{w})
			close(w.done)
		}
		return
	}
	for _, w := range group {
		w.err = err
		close(w.done)
	}
}

// runGroup runs the writes' steps and their events in one transaction. beforeCommit says the
// error came before COMMIT was sent, so nothing was committed and a retry is safe.
func (q *Queue) runGroup(ctx context.Context, group []*write) (err error, beforeCommit bool) {
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("group commit: %w", err), true
	}
	// A connection left inside a transaction is closed by Release, never reused.
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(claimPlan)
	locks := groupLocks(group)
	for _, key := range locks {
		b.Queue(lockSQL, key)
	}
	for _, w := range group {
		for _, s := range w.steps {
			b.Queue(s.sql, s.args...)
		}
	}
	if err := readGroup(conn.SendBatch(ctx, b), len(locks), group); err != nil {
		rollback(ctx, conn.Conn())
		return err, true
	}
	var rows []events.Row
	for _, w := range group {
		if w.changes == nil {
			continue
		}
		for _, c := range w.changes() {
			ev, err := q.jobEvent(c.prev, c.row)
			if err != nil {
				rollback(ctx, conn.Conn())
				return err, true
			}
			row, err := q.outbox.Prepare(w.ctx, ev)
			if err != nil {
				rollback(ctx, conn.Conn())
				return err, true
			}
			rows = append(rows, row)
		}
	}
	b = &pgx.Batch{}
	events.QueueRows(b, rows)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		// The events' insert failed (the transaction rolls back) or the commit's outcome is
		// unknown: either way, no retry.
		return fmt.Errorf("group commit: %w", err), false
	}
	return nil, false
}

// claimPlan keeps a claim on the ordered index of queued jobs, stopping at the first one that
// fits. A queue grows and drains faster than statistics follow: planned on stale ones (a
// handful of queued jobs), a claim reads every queued job and sorts them — its cost grows
// with the queue, and a burst of n jobs costs n² — where the ordered scan costs the same at
// any length. The group's other statements are key lookups and inserts, which no sort or
// bitmap scan serves better. JIT is off too: the penalty that steers the planner away from
// a sort would otherwise make the job-output insert (whose only plan sorts a few rows)
// "expensive" enough to be compiled, which takes half a second.
const claimPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('jit', 'off', true)`

// lockSQL takes one advisory lock of a write until the group's transaction ends.
const lockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`

// groupLocks are the advisory lock keys of the group's writes, sorted, each once.
func groupLocks(group []*write) []string {
	var keys []string
	for _, w := range group {
		keys = append(keys, w.locks...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// readGroup reads the results of BEGIN, the plan settings, the locks and every step, in
// order.
func readGroup(br pgx.BatchResults, locks int, group []*write) (err error) {
	defer func() { err = errors.Join(err, br.Close()) }()
	for _, what := range []string{"begin", "plan settings"} {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("group commit: %s: %w", what, err)
		}
	}
	for range locks {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("group commit: lock: %w", err)
		}
	}
	for _, w := range group {
		for _, s := range w.steps {
			if s.scan == nil {
				if _, err := br.Exec(); err != nil {
					return fmt.Errorf("group commit: %w", err)
				}
				continue
			}
			rows, err := br.Query()
			if err == nil {
				err = s.scan(rows)
				rows.Close()
				if err == nil {
					err = rows.Err()
				}
			}
			if err != nil {
				return fmt.Errorf("group commit: %w", err)
			}
		}
	}
	return nil
}

func rollback(ctx context.Context, conn *pgx.Conn) {
	_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
}

// scanCount returns a scan that reads one count into *dst.
func scanCount(dst *int) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(dst); err != nil {
				return err
			}
		}
		return nil
	}
}

// scanJobRows returns a scan that collects jobColumns rows into *dst.
func scanJobRows(dst *[]*jobRow) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			r, err := scanJob(rows)
			if err != nil {
				return err
			}
			*dst = append(*dst, r)
		}
		return nil
	}
}
