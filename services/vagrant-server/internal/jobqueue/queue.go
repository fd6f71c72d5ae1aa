package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// Options tune a Queue. Zero values take the defaults.
type Options struct {
	// AckTimeout is how long an assigned runner has to acknowledge a job before it goes back
	// to the queue. Default 30s.
	AckTimeout time.Duration
	// HeartbeatTimeout is how long a running job may go without a heartbeat before it fails
	// and its runner is told to stop. Default 60s (runners beat every few seconds).
	HeartbeatTimeout time.Duration
	// PollInterval is how often a blocked Assign looks for work even without a notification:
	// the fallback should a NOTIFY be missed. Default 2s.
	PollInterval time.Duration
	// ListenCheckInterval is how often an idle LISTEN connection is pinged, so a dead
	// connection is replaced instead of silently delivering nothing. Default 15s.
	ListenCheckInterval time.Duration
	// Logger receives the listener's connection problems. Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AckTimeout, 30*time.Second)
	def(&o.HeartbeatTimeout, 60*time.Second)
	def(&o.PollInterval, 2*time.Second)
	def(&o.ListenCheckInterval, 15*time.Second)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Queue is the job queue of one server replica. Any number of Queues (in one process or
// many) may share a schema. Its methods are safe for concurrent use.
type Queue struct {
	pool   *pgxpool.Pool
	opts   Options
	schema string
	outbox events.Outbox
	hub    *hub
	stop   context.CancelFunc
	done   chan struct{}
}

// New returns the Queue on pool, whose schema must have Migrations applied, and starts its
// LISTEN connection (one connection taken from the pool for the Queue's lifetime). Close
// stops it.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Queue, error) {
	q := &Queue{pool: pool, opts: opts.withDefaults(), hub: newHub(), done: make(chan struct{})}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&q.schema); err != nil {
		return nil, fmt.Errorf("jobqueue: find the schema: %w", err)
	}
	listenCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.stop = stop
	ready := make(chan struct{})
	go func() {
		defer close(q.done)
		q.listen(listenCtx, ready)
	}()
	// Wait for the first LISTEN so a job queued right after New returns wakes its waiters;
	// should it fail, the listener keeps retrying and Assign polls meanwhile.
	select {
	case <-ready:
	case <-ctx.Done():
		q.Close()
		return nil, ctx.Err()
	}
	return q, nil
}

// Close stops the listener. Blocked Assign calls keep working by polling until their
// contexts end; the pool stays open (the caller owns it).
func (q *Queue) Close() {
	q.stop()
	<-q.done
}

// Queue validates job (see validateNew) and queues it. expiresIn > 0 makes the job fail
// (DEADLINE_EXCEEDED) if no runner has acknowledged it within that time. Server-side fields
// the client may have set (state, times, result, ...) are ignored. It returns the new id.
func (q *Queue) Queue(ctx context.Context, job *vagrant.Job, expiresIn time.Duration) (string, error) {
	if err := validateNew(job); err != nil {
		return "", err
	}
	if expiresIn < 0 {
		return "", &ValidationError{Field: "expires_in", Reason: "must not be negative"}
	}
	id := ulid.Make().String()
	spec := proto.CloneOf(job)
	clearServerFields(spec)
	b, err := proto.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("marshal job: %w", err)
	}
	err = pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		r, err := scanJob(tx.QueryRow(ctx, `INSERT INTO jobs (id, spec, operation, target_runner,
				required_components, state, queue_time, expire_time)
			VALUES ($1, $2, $3, $4, $5, $6, now(),
				CASE WHEN $7::bigint > 0 THEN now() + $7::bigint * interval '1 microsecond' END)
			RETURNING `+jobColumns,
			id, b, operationName(job), targetRunnerID(job), requiredTokens(job),
			int16(vagrant.Job_QUEUED), expiresIn.Microseconds()))
		if err != nil {
			return fmt.Errorf("insert job: %w", err)
		}
		return q.recordJobChange(ctx, tx, vagrant.Job_UNKNOWN, r)
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// clearServerFields drops what only the server may set.
func clearServerFields(j *vagrant.Job) {
	j.Id, j.State, j.AssignedRunner = "", vagrant.Job_UNKNOWN, nil
	j.QueueTime, j.AssignTime, j.AckTime, j.CompleteTime = nil, nil, nil, nil
	j.Error, j.Result, j.CancelTime, j.ExpireTime = nil, nil, nil, nil
}

// errUnchanged tells change that fn decided to change nothing: no update, no event.
var errUnchanged = errors.New("unchanged")

// change locks job id, lets fn modify it (now is the database's transaction time), saves it
// and records the event when its state or cancel request changed: all in one transaction.
func (q *Queue) change(ctx context.Context, id string, fn func(r *jobRow, now time.Time) error) (*jobRow, error) {
	var out *jobRow
	err := pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		r, now, err := lockJob(ctx, tx, id)
		if err != nil {
			return err
		}
		out = r
		return q.apply(ctx, tx, r, now, fn)
	})
	return out, err
}

// apply runs fn on the locked row r and writes the result in tx.
func (q *Queue) apply(ctx context.Context, tx pgx.Tx, r *jobRow, now time.Time, fn func(r *jobRow, now time.Time) error) error {
	prevState, prevCancel := r.state, r.cancelRequested
	if err := fn(r, now); errors.Is(err, errUnchanged) {
		return nil
	} else if err != nil {
		return err
	}
	if err := r.update(ctx, tx); err != nil {
		return err
	}
	if r.state == prevState && r.cancelRequested == prevCancel {
		return nil
	}
	return q.recordJobChange(ctx, tx, prevState, r)
}
