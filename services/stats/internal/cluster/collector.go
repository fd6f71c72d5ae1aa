package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Reader reads one source's report. It honours ctx's deadline.
type Reader[T any] func(ctx context.Context) (*T, error)

// Config says which sources the collector refreshes and how often. At least one reader is
// required; a nil reader is a source that is not configured.
type Config struct {
	Ceph      Reader[Ceph]
	Kube      Reader[Kube]
	Inventory Reader[Inventory]
	// KubeChanged, when set, asks for a Kubernetes refresh before the interval is up (a watch
	// saw a change).
	KubeChanged <-chan struct{}
	// Interval is the time between the end of one refresh and the next; default 5s.
	Interval time.Duration
	// Timeout bounds one refresh; default 30s.
	Timeout time.Duration
	// History, when set, records the cluster's state to compute stability and trends.
	History *Recorder
	Logger  *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Collector refreshes every configured source in the background, each on its own schedule,
// and publishes a new View after every refresh. A source that fails keeps its last report;
// the failure shows in Sources, the metrics and the log. Readers of the View never wait for a
// source.
type Collector struct {
	cfg   Config
	mu    sync.Mutex // guards the slots
	ceph  slot[Ceph]
	kube  slot[Kube]
	inv   slot[Inventory]
	view  atomic.Pointer[View]
	total map[string]uint64 // failed refreshes per source, for the metrics; guarded by mu
}

// slot is one source's latest report and state.
type slot[T any] struct {
	read  Reader[T]
	value *T
	state SourceState
}

// NewCollector checks cfg and returns a collector that has not refreshed anything yet.
func NewCollector(cfg Config) (*Collector, error) {
	if cfg.Ceph == nil && cfg.Kube == nil && cfg.Inventory == nil {
		return nil, errors.New("cluster: at least one source (Ceph, Kubernetes or the inventory) is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Collector{cfg: cfg, total: map[string]uint64{}}
	c.ceph = slot[Ceph]{read: cfg.Ceph, state: SourceState{Name: "ceph"}}
	c.kube = slot[Kube]{read: cfg.Kube, state: SourceState{Name: "kubernetes"}}
	c.inv = slot[Inventory]{read: cfg.Inventory, state: SourceState{Name: "inventory"}}
	return c, nil
}

// Run refreshes every configured source until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if c.cfg.Ceph != nil {
		wg.Go(func() { loop(ctx, c, &c.ceph, nil) })
	}
	if c.cfg.Kube != nil {
		wg.Go(func() { loop(ctx, c, &c.kube, c.cfg.KubeChanged) })
	}
	if c.cfg.Inventory != nil {
		wg.Go(func() { loop(ctx, c, &c.inv, nil) })
	}
	wg.Wait()
	return nil
}

// loop refreshes one source now, then after every interval or wake-up, until ctx ends.
func loop[T any](ctx context.Context, c *Collector, s *slot[T], wake <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-wake: // Reset below discards a pending tick (Go 1.23 timers)
		}
		refresh(ctx, c, s)
		timer.Reset(c.cfg.Interval)
	}
}

// refresh reads one source and publishes a new View.
func refresh[T any](ctx context.Context, c *Collector, s *slot[T]) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	value, err := s.read(rctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: a cut-off read is not the source's failure
	}
	now := c.cfg.Now()
	c.mu.Lock()
	prev := s.state
	if err != nil {
		if s.state.Err == nil {
			s.state.FailingSince = now
		}
		s.state.Err = err
		s.state.Failures++
		c.total[s.state.Name]++
	} else {
		s.value, s.state.At, s.state.Err, s.state.Failures = value, now, nil, 0
	}
	state := s.state
	c.publishLocked(now)
	c.mu.Unlock()
	c.logChange(prev, state)
}

// logChange logs when a source first answers, starts failing, fails differently, or recovers:
// not every refresh, so a source that is down for a day writes a handful of lines.
func (c *Collector) logChange(prev, now SourceState) {
	log := c.cfg.Logger.With("source", now.Name)
	switch {
	case now.Err != nil && (prev.Err == nil || prev.Err.Error() != now.Err.Error()):
		log.Warn("source refresh failed; serving its last report", "err", now.Err,
			"last_success", now.At, "failures", now.Failures)
	case now.Err == nil && prev.Err != nil:
		log.Info("source recovered", "failures", prev.Failures, "failing_since", prev.FailingSince)
	case now.Err == nil && prev.At.IsZero():
		log.Info("source answered")
	}
}

// Refresh composes a new View from the reports at hand (the clock moved: nodes go stale,
// changes leave the stability window).
func (c *Collector) Refresh() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publishLocked(c.cfg.Now())
}

func (c *Collector) publishLocked(now time.Time) {
	if c.ceph.value == nil && c.kube.value == nil && c.inv.value == nil {
		return
	}
	var observe func(Sample) int
	if c.cfg.History != nil {
		observe = c.cfg.History.Observe
	}
	c.view.Store(compose(now, c.ceph.value, c.kube.value, c.inv.value, c.sourcesLocked(), observe))
}

// sourcesLocked are the configured sources' states.
func (c *Collector) sourcesLocked() []SourceState {
	var out []SourceState
	if c.ceph.read != nil {
		out = append(out, c.ceph.state)
	}
	if c.kube.read != nil {
		out = append(out, c.kube.state)
	}
	if c.inv.read != nil {
		out = append(out, c.inv.state)
	}
	return out
}

// Sources are the configured sources' states now.
func (c *Collector) Sources() []SourceState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sourcesLocked()
}

// View is the newest View, or a *NoDataError while no source has ever answered.
func (c *Collector) View() (*View, error) {
	if v := c.view.Load(); v != nil {
		return v, nil
	}
	return nil, &NoDataError{Sources: c.Sources()}
}

// KubeConfigured reports whether the Kubernetes source is configured.
func (c *Collector) KubeConfigured() bool { return c.cfg.Kube != nil }
