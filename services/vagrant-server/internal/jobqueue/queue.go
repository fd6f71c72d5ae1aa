package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/input"
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
	// RunnerTimeout is how long a runner stays online without its replica refreshing its
	// last_seen (every third of it while its RunnerConfig stream is open). A replica that
	// dies with the stream stops refreshing, and any replica's reaper then marks the runner
	// offline. Default 30s.
	RunnerTimeout time.Duration
	// ListenCheckInterval is how often an idle LISTEN connection is pinged, so a dead
	// connection is replaced instead of silently delivering nothing. Default 15s.
	ListenCheckInterval time.Duration
	// MaxUnfinishedPerOwner bounds the jobs one owner holds queued, assigned or running:
	// Queue refuses one more with *QuotaError. 0: no limit.
	MaxUnfinishedPerOwner int
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
	def(&o.RunnerTimeout, 30*time.Second)
	def(&o.ListenCheckInterval, 15*time.Second)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Queue is the job queue of one server replica. Any number of Queues (in one process or
// many) may share a schema. Its methods are safe for concurrent use.
type Queue struct {
	pool    *pgxpool.Pool
	opts    Options
	schema  string
	outbox  events.Outbox
	hub     *hub
	writes  chan *write
	closing chan struct{}
	live    *liveness
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// New returns the Queue on pool, whose schema must have Migrations applied, and starts its
// LISTEN connection (one connection taken from the pool for the Queue's lifetime), its
// committers and the refresh of its runners' last_seen. Close stops them.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Queue, error) {
	q := &Queue{pool: pool, opts: opts.withDefaults(), hub: newHub(), writes: make(chan *write),
		closing: make(chan struct{})}
	q.live = newLiveness(q)
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&q.schema); err != nil {
		return nil, fmt.Errorf("jobqueue: find the schema: %w", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.stop = stop
	for range committers {
		q.done.Go(func() { q.commitLoop(runCtx) })
	}
	q.done.Go(func() { q.live.run(runCtx) })
	ready := make(chan struct{})
	q.done.Go(func() { q.listen(runCtx, ready) })
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

// Close stops the listener, the committers and the runners' refresh; calls that need a
// commit fail from then on. Blocked Assign calls end with an error; the pool stays open
// (the caller owns it).
func (q *Queue) Close() {
	select {
	case <-q.closing:
		return
	default:
	}
	close(q.closing)
	q.stop()
	q.done.Wait()
}

// insertSQL queues a job of owner $10 expiring in $6 microseconds (0: never), or — $7 names a
// runner — queues it and assigns it to that runner at once, with an ack deadline of $8
// microseconds. $9 is its route (routeOf) for the notifications. With a limit $11 > 0 it
// inserts nothing (and returns no row) while the owner holds $11 unfinished jobs: the count
// runs after the owner's lock (see Queue), so it sees every job of the owner committed
// before, and those of its own group.
const insertSQL = `INSERT INTO jobs (id, spec, operation, target_runner, required_components, state,
		queue_time, expire_time, assigned_runner, assign_time, ack_deadline, route, owner)
	SELECT $1::text, $2::bytea, $3::text, $4::text, $5::text[], CASE WHEN $7::text = '' THEN 1 ELSE 2 END, now(),
		CASE WHEN $6::bigint > 0 THEN now() + $6::bigint * interval '1 microsecond' END,
		$7::text, CASE WHEN $7::text <> '' THEN now() END,
		CASE WHEN $7::text <> '' THEN now() + $8::bigint * interval '1 microsecond' END, $9::text, $10::text
	WHERE $11::int <= 0 OR (SELECT count(*) FROM jobs WHERE owner = $10::text AND state IN (1, 2, 3)) < $11::int
	RETURNING ` + jobColumns

// heldSQL counts owner $1's unfinished jobs, for a refusal's message.
const heldSQL = `SELECT count(*) FROM jobs WHERE owner = $1::text AND state IN (1, 2, 3)`

// Queue validates job (see validateNew) and queues it for owner, whom it counts against
// (tokens.Caller.Owner; "" is an owner too). expiresIn > 0 makes the job fail
// (DEADLINE_EXCEEDED) if no runner has acknowledged it within that time. Server-side fields
// the client may have set (state, times, result, ...) are ignored. It returns the new id.
//
// When the owner already holds Options.MaxUnfinishedPerOwner unfinished jobs it queues
// nothing and returns a *QuotaError. The count and the insert are one transaction holding
// the owner's advisory lock (taken by the group commit before any statement, in one order
// for every group), so queueing racing on any replica never takes more places than there are.
//
// When a runner waiting on this replica can take the job, the same commit assigns it to
// that runner: the job's QUEUED and WAITING events are both recorded.
func (q *Queue) Queue(ctx context.Context, job *vagrant.Job, expiresIn time.Duration, owner string) (string, error) {
	if err := validateNew(job); err != nil {
		return "", err
	}
	if expiresIn < 0 {
		return "", &input.Error{Field: "expires_in", Reason: "must not be negative"}
	}
	id := ulid.Make().String()
	spec := proto.CloneOf(job)
	clearServerFields(spec)
	b, err := proto.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("marshal job: %w", err)
	}
	target, required := targetRunnerID(job), requiredTokens(job)
	rt := routeOf(target, required)
	waiter := q.hub.reserve(parsedRoute(rt))
	var runner string
	if waiter != nil {
		runner = waiter.runner
	}
	limit := q.opts.MaxUnfinishedPerOwner
	var rows []*jobRow
	w := &write{
		steps: []step{{sql: insertSQL, scan: scanJobRows(&rows), args: []any{id, b, operationName(job), target,
			required, microseconds(expiresIn), runner, q.opts.AckTimeout.Microseconds(), rt, owner, limit}}},
		changes: func() []jobChange {
			if len(rows) == 0 {
				return nil // refused: nothing happened
			}
			return queuedChanges(rows[0])
		},
		undo: func() { rows = nil },
	}
	var held int
	if limit > 0 {
		w.locks = []string{ownerLock(q.schema, owner)}
		w.steps = append(w.steps, step{sql: heldSQL, args: []any{owner}, scan: scanCount(&held)})
	}
	err = q.commit(ctx, w)
	if err == nil && len(rows) == 0 {
		err = &QuotaError{Owner: owner, Held: held, Limit: limit}
	}
	if waiter != nil {
		var assigned *vagrant.Job
		if err == nil {
			assigned, err = rows[0].job()
		}
		waiter.assigned <- assigned
	}
	var quota *QuotaError
	if errors.As(err, &quota) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("queue job: %w", err)
	}
	return id, nil
}

// ownerLock is the advisory lock key of owner's jobs in schema: the queue's deployments may
// share a database.
func ownerLock(schema, owner string) string {
	return "vagrant.jobs.owner:" + schema + ":" + owner
}

// microseconds converts d for the database, whose times have microseconds: rounded up, so
// any positive duration stays positive (1ns is an expiry, not none).
func microseconds(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// queuedChanges are the events of a new job: QUEUED, and WAITING when it was assigned at
// once.
func queuedChanges(r *jobRow) []jobChange {
	if r.state == vagrant.Job_QUEUED {
		return []jobChange{{prev: vagrant.Job_UNKNOWN, row: r}}
	}
	queued := *r
	queued.state, queued.assignedRunner, queued.assignTime, queued.ackDeadline = vagrant.Job_QUEUED, "", nil, nil
	return []jobChange{{prev: vagrant.Job_UNKNOWN, row: &queued}, {prev: vagrant.Job_QUEUED, row: r}}
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

// Bounds of a job's labels: every list of jobs (ListJobs, the console's Jobs page, events)
// carries them, so a job with 100,000 labels (1.29 MB) was downloaded again at every poll.
// Keys have the bound of every map key (255 bytes, checked for the whole request).
const (
	MaxLabels          = 64
	MaxLabelValueBytes = 512
)

// validateNew checks a job about to be queued: it has no id yet, a target runner and an
// operation this server knows. It returns an *input.Error naming the field or an *UnknownOperationError.
func validateNew(job *vagrant.Job) error {
	if job == nil {
		return &input.Error{Field: "job", Reason: "required"}
	}
	if job.GetId() != "" {
		return &input.Error{Field: "job.id", Reason: "must be empty: the server assigns the id when the job is queued"}
	}
	switch t := job.GetTargetRunner().GetTarget().(type) {
	case *vagrant.Ref_Runner_Any:
	case *vagrant.Ref_Runner_Id:
		if t.Id.GetId() == "" {
			return &input.Error{Field: "job.target_runner.id.id", Reason: "required: the id of the runner that must run the job (or set target_runner.any)"}
		}
	default:
		return &input.Error{Field: "job.target_runner", Reason: "required: set any (any runner) or id (one runner)"}
	}
	if operationName(job) == "" {
		if num := unknownOperation(job); num != 0 {
			return &UnknownOperationError{FieldNumber: int32(num)}
		}
		return &input.Error{Field: "job.operation", Reason: "required: set one of noop, auth, docs, validate, command, init, init_basis, init_project"}
	}
	if err := validateLabels(job.GetLabels()); err != nil {
		return err
	}
	if git := job.GetDataSource().GetGit(); git != nil {
		if git.GetUrl() == "" {
			return &input.Error{Field: "job.data_source.git.url", Reason: "required: the repository to clone"}
		}
		if p := git.GetPath(); p != "" && (path.IsAbs(p) || strings.Contains(p, "..")) {
			return &input.Error{Field: "job.data_source.git.path", Reason: "must be a relative path inside the repository without \"..\""}
		}
	}
	return nil
}

// validateLabels refuses more than MaxLabels labels, an empty key, and a value over its bound,
// naming the label.
func validateLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return &input.Error{Field: "job.labels", Reason: fmt.Sprintf("at most %d labels, got %d", MaxLabels, len(labels))}
	}
	for k, v := range labels {
		switch {
		case k == "":
			return &input.Error{Field: "job.labels", Reason: "a label key must not be empty"}
		case len(v) > MaxLabelValueBytes:
			return &input.Error{Field: "job.labels[" + input.Truncate(k, 32) + "]", Reason: fmt.Sprintf("longer than %d bytes", MaxLabelValueBytes)}
		}
	}
	return nil
}
