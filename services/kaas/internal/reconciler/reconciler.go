// Package reconciler carries out what the API accepted: it compares each cluster's desired
// state (pools, counts, version, deletion) with its machines and moves the machines toward it
// through the cluster's provider, in idempotent steps, with retries and backoff. Progress is
// written after every step, so a restarted kaas resumes where it was. Clusters are leased
// (cluster.Claim), so across replicas one reconciler at a time acts on a cluster.
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// Store is what the reconciler needs of the store: leases on clusters, and writes fenced
// by them. Every write of a cluster whose lease owner no longer holds fails with
// cluster.ErrLeaseLost and changes nothing.
type Store interface {
	// Claim leases the cluster due longest and held by nobody to owner; ok is false when
	// none is due.
	Claim(ctx context.Context, owner string, lease time.Duration) (c cluster.Claim, ok bool, err error)
	// Renew extends owner's lease.
	Renew(ctx context.Context, id int64, owner string, lease time.Duration) error
	// Release gives up owner's lease; the next pass is due after delay, or at once when the
	// API changed the cluster since c was claimed.
	Release(ctx context.Context, c cluster.Claim, owner string, delay time.Duration) error
	// Load returns the cluster's view and sealed key material.
	Load(ctx context.Context, id int64) (cluster.View, []byte, error)
	// Apply passes the cluster's current view to update and writes the change it returns,
	// view and events, in one transaction; an error from update saves nothing.
	Apply(ctx context.Context, id int64, owner string, update func(cluster.View) (cluster.Change, error)) (cluster.View, error)
	// Remove deletes the cluster with the events remove returns for its current view; an
	// error from remove deletes nothing.
	Remove(ctx context.Context, id int64, owner string, remove func(cluster.View) ([]cluster.Event, error)) error
}

// Keys opens a cluster's sealed key material (pki.Vault).
type Keys interface {
	Open(sealed []byte, cluster string) (*pki.Cluster, error)
}

// Options tune the reconciler; zero values take the defaults in brackets.
type Options struct {
	// Owner names this replica in leases [required].
	Owner string
	// Workers is how many clusters this replica reconciles at once [8].
	Workers int
	// Lease is how long a claim lasts without renewal [30s]; it is renewed every third.
	Lease time.Duration
	// Poll is the delay before the next pass of a cluster still converging, and the idle
	// check when no notification arrives [2s].
	Poll time.Duration
	// Resync is the delay before a converged cluster's machines are looked at again [1m].
	Resync time.Duration
	// RetryMin and RetryMax bound the backoff after a failed pass [1s, 1m].
	RetryMin, RetryMax time.Duration
	// Parallel bounds provider calls at once within one cluster [8].
	Parallel int
	// CallTimeout bounds each provider call [2m].
	CallTimeout time.Duration
	// ProvisionTimeout fails a machine not ready this long after it was created [30m].
	ProvisionTimeout time.Duration
	// FailAfter is how many failed passes in a row (an unreachable provider) show in the
	// status (cluster.Derive); 0: never [0].
	FailAfter int
	Logger    *slog.Logger
}

func (o *Options) defaults() error {
	if o.Owner == "" {
		return errors.New("reconciler: Options.Owner is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	def(&o.Lease, 30*time.Second)
	def(&o.Poll, 2*time.Second)
	def(&o.Resync, time.Minute)
	def(&o.RetryMin, time.Second)
	def(&o.RetryMax, time.Minute)
	def(&o.CallTimeout, 2*time.Minute)
	def(&o.ProvisionTimeout, 30*time.Minute)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Reconciler runs passes over due clusters.
type Reconciler struct {
	store     Store
	keys      Keys
	providers *provider.Registry
	o         Options
	log       *slog.Logger
	wake      chan struct{}
	passes    *prometheus.CounterVec
	duration  prometheus.Histogram
	grants    grants
}

// New builds a reconciler.
func New(st Store, keys Keys, providers *provider.Registry, o Options) (*Reconciler, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Reconciler{
		store: st, keys: keys, providers: providers, o: o, log: o.Logger.With("component", "reconciler"),
		wake: make(chan struct{}, 1),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plinth_kaas_reconcile_passes_total",
			Help: "Reconciler passes over clusters, by outcome (converged, progressing, failed, lease_lost)."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "plinth_kaas_reconcile_pass_seconds",
			Help: "Duration of reconciler passes.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 10)}),
	}, nil
}

// Collectors are the reconciler's metrics.
func (r *Reconciler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.passes, r.duration}
}

// Wake makes idle workers look for due clusters now.
func (r *Reconciler) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range r.o.Workers {
		wg.Add(1)
		go func() { defer wg.Done(); r.work(ctx) }()
	}
	wg.Wait()
	return nil
}

// Listen wakes the workers on every notification on channel (the store's, on an API change
// anywhere, on any replica) until ctx ends, reconnecting with backoff; Poll covers the gaps.
func (r *Reconciler) Listen(ctx context.Context, pool *pgxpool.Pool, channel string) error {
	b := backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}
	for ctx.Err() == nil {
		err := pg.ListenOnce(ctx, pool, pg.ListenOptions{Channel: channel,
			Listening: func() { b.Reset(); r.Wake() }, Notify: func(string) { r.Wake() }})
		if err != nil && ctx.Err() == nil {
			r.log.Warn("listening for cluster changes failed; polling until it is back", "error", err)
		}
		backoff.Sleep(ctx, b.Next(), nil)
	}
	return nil
}

func (r *Reconciler) work(ctx context.Context) {
	for ctx.Err() == nil {
		c, ok, err := r.store.Claim(ctx, r.o.Owner, r.o.Lease)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("claiming a cluster failed", "error", err)
			}
			backoff.Sleep(ctx, r.o.Poll, nil)
			continue
		}
		if !ok {
			backoff.Sleep(ctx, r.o.Poll, r.wake)
			continue
		}
		r.Wake() // another cluster may be due too: let the next idle worker look
		delay := r.claimed(ctx, c)
		relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := r.store.Release(relCtx, c, r.o.Owner, delay); err != nil {
			r.log.Warn("releasing a cluster's lease failed; it lapses by itself", "cluster", c.Name, "error", err)
		}
		cancel()
	}
}

// claimed runs one pass on c while renewing the lease; it returns when the next pass is due.
func (r *Reconciler) claimed(ctx context.Context, c cluster.Claim) time.Duration {
	passCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(r.o.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-passCtx.Done():
				return
			case <-t.C:
			}
			if err := r.store.Renew(passCtx, c.ID, r.o.Owner, r.o.Lease); err != nil && passCtx.Err() == nil {
				// Lost (or cannot prove) the lease: stop before another replica acts too.
				cancel(fmt.Errorf("renew lease: %w", err))
				return
			}
		}
	}()
	began := time.Now()
	p := &pass{r: r, claim: c, log: r.log.With("cluster", c.Name)}
	delay, outcome := p.run(passCtx)
	cancel(nil)
	<-renewed
	r.passes.WithLabelValues(outcome).Inc()
	r.duration.Observe(time.Since(began).Seconds())
	return delay
}

// retryDelay is the backoff after attempts failed passes in a row.
func (r *Reconciler) retryDelay(attempts int) time.Duration {
	b := backoff.Backoff{Min: r.o.RetryMin, Max: r.o.RetryMax}
	for range max(attempts-1, 0) {
		b.Next()
	}
	return b.Next()
}
