package runner

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// Options configure a Runner.
type Options struct {
	// ID is the runner's id (LoadID).
	ID string
	// ByIDOnly registers the runner for jobs that target it by id only.
	ByIDOnly bool
	// Slots is how many jobs the runner runs at once, each on its own RunnerJobStream
	// (upstream's protocol: one job per stream); default 1.
	Slots int
	// Client is the vagrant-server client, dialed with Credentials.
	Client vagrant.VagrantClient
	// Credentials hold the login token; they are refreshed before each registration attempt.
	Credentials *Credentials
	// Executor executes the jobs' operations.
	Executor *operation.Executor
	// BaseEnv starts the environment of commands in machines (HOME, ...); config variables follow.
	BaseEnv []string
	// Heartbeat is the interval of job heartbeats; default 10s.
	Heartbeat time.Duration
	// ShutdownGrace is how long a running job may go on after shutdown begins; default 15s.
	ShutdownGrace time.Duration
	// MinBackoff and MaxBackoff bound the waits between reconnection attempts; default 500ms
	// and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Journal remembers the jobs started, so none runs twice (OpenJournal); nil keeps them
	// in memory.
	Journal *Journal
	// Metrics, when set, are kept up to date.
	Metrics *Metrics
	// Logger receives the runner's logs; nil discards them.
	Logger *slog.Logger
}

// Runner registers with vagrant-server under one id and executes jobs, up to Options.Slots at
// once.
type Runner struct {
	o     Options
	log   *slog.Logger
	state *state
}

// New returns a Runner; Run starts it.
func New(o Options) (*Runner, error) {
	if o.ID == "" || o.Client == nil || o.Credentials == nil || o.Executor == nil {
		return nil, errors.New("runner: ID, Client, Credentials and Executor are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Heartbeat, 10*time.Second)
	def(&o.ShutdownGrace, 15*time.Second)
	def(&o.MinBackoff, 500*time.Millisecond)
	def(&o.MaxBackoff, 30*time.Second)
	if o.Slots <= 0 {
		o.Slots = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Journal == nil {
		o.Journal, _ = OpenJournal("") // in memory: cannot fail
	}
	r := &Runner{o: o, log: o.Logger.With("runner_id", o.ID), state: newState(o.ID, o.Slots)}
	r.setRegistered(false, r.state.snapshot().Problem) // the metric exists from the start
	return r, nil
}

// Status reports the runner's registration and running jobs.
func (r *Runner) Status() Status { return r.state.snapshot() }

// ID is the id the runner registers under.
func (r *Runner) ID() string { return r.o.ID }

// Run registers and executes jobs, Slots at once, until ctx is done. Then it stops taking
// jobs, lets running jobs finish for up to ShutdownGrace (after which they are aborted and
// reported as such), and closes its streams. Failures to reach the server are retried with backoff, never
// returned: the runner waits for the server as long as it runs.
func (r *Runner) Run(ctx context.Context) error {
	// The registration outlives ctx until the job loops are done: a job still finishing after
	// the shutdown request keeps its runner registered.
	regCtx, stopReg := context.WithCancel(context.WithoutCancel(ctx))
	var reg, slots sync.WaitGroup
	reg.Go(func() { r.registerLoop(regCtx) })
	for range r.o.Slots {
		slots.Go(func() { r.jobLoop(ctx) })
	}
	slots.Wait()
	stopReg()
	reg.Wait()
	return nil
}

// jobLoop is one slot: it takes one job after another while registered.
func (r *Runner) jobLoop(ctx context.Context) {
	bo := backoff.Backoff{Min: r.o.MinBackoff, Max: r.o.MaxBackoff}
	for ctx.Err() == nil {
		ok, changed := r.state.registered()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			continue
		}
		err := r.takeJob(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			bo.Reset()
			continue
		}
		r.countStreamError("job")
		wait := bo.Next()
		r.log.WarnContext(ctx, "job stream failed; retrying", "error", err, "retry_in", wait.Round(time.Millisecond))
		backoff.Sleep(ctx, wait, nil)
	}
}

func (r *Runner) countStreamError(stream string) {
	if r.o.Metrics != nil {
		r.o.Metrics.streamErrors.WithLabelValues(stream).Inc()
	}
}
