package jobqueue

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Change is what a Watch reports: the job's state and cancel request after a change made by
// any replica.
type Change struct {
	JobID string
	State vagrant.Job_State
	// runner is the digest of the assigned runner (notifications carry no runner ids).
	runner string
	// CancelRequested is true once Cancel was called for a job a runner holds (or held).
	CancelRequested bool
	// CancelForced is true when that cancel was forced, or the job's heartbeat timed out:
	// the job already ended and the runner must stop at once.
	CancelForced bool
}

// AssignedTo reports whether the job is assigned to runner.
func (c Change) AssignedTo(runner string) bool { return c.runner != "" && c.runner == digest(runner) }

// Watch follows one job. C delivers the latest Change: changes coalesce, so a slow reader
// skips intermediate states. A change is a signal, not the truth: the LISTEN connection can
// deliver a notification after a newer state was read or notified (e.g. the job's QUEUED
// after its assignment), so a Change may be older than the job. Read the job (Get) when one
// arrives to act on its current state; every change is followed by its own notification, so
// the newest state is always read eventually. Close it when done.
type Watch struct {
	hub   *hub
	jobID string
	c     chan Change
	seen  bool // a change arrived by notification; guarded by hub.mu
}

// C returns the channel of changes.
func (w *Watch) C() <-chan Change { return w.c }

// Close stops delivery.
func (w *Watch) Close() {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	w.hub.watches.Remove(w.jobID, w)
}

// deliver replaces any undelivered change with c; called with hub.mu held.
func (w *Watch) deliver(c Change) {
	w.seen = true
	select {
	case w.c <- c:
		return
	default:
	}
	select {
	case <-w.c:
	default:
	}
	w.c <- c
}

// Watch follows job id across replicas, starting with its current state. The runner stream
// uses it to learn of cancellation ("cancel requested for job X": CancelRequested, with
// CancelForced); job streams use it for state events.
func (q *Queue) Watch(ctx context.Context, id string) (*Watch, error) {
	w := &Watch{hub: q.hub, jobID: id, c: make(chan Change, 1)}
	q.hub.mu.Lock()
	q.hub.watches.Add(id, w)
	q.hub.mu.Unlock()
	// Read after registering: a change committed after this read is notified to w. Should a
	// notification arrive first it is at least as new as this read, so the read is dropped.
	cs, err := q.readChanges(ctx, []string{id})
	if err == nil && len(cs) == 0 {
		err = fmt.Errorf("job %s: %w", quoteID(id), ErrJobNotFound)
	}
	if err != nil {
		w.Close()
		return nil, err
	}
	q.hub.mu.Lock()
	if !w.seen {
		w.deliver(cs[0])
	}
	q.hub.mu.Unlock()
	return w, nil
}

// WatchHeld follows a job the caller has just been handed (Assign), whose state it knows:
// no read. A change committed after the assignment is notified; one committed before it is
// in the state Ack returns.
func (q *Queue) WatchHeld(id string) *Watch {
	w := &Watch{hub: q.hub, jobID: id, c: make(chan Change, 1)}
	q.hub.mu.Lock()
	defer q.hub.mu.Unlock()
	q.hub.watches.Add(id, w)
	return w
}

// readChanges reads the current state of jobs ids.
func (q *Queue) readChanges(ctx context.Context, ids []string) ([]Change, error) {
	rows, err := q.pool.Query(ctx, `SELECT id, state, assigned_runner, cancel_requested, cancel_forced
		FROM jobs WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read job states: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Change, error) {
		var c Change
		var state int16
		var runner string
		err := row.Scan(&c.JobID, &state, &runner, &c.CancelRequested, &c.CancelForced)
		c.State, c.runner = vagrant.Job_State(state), digest(runner)
		return c, err
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read job states: %w", err)
	}
	return cs, nil
}
