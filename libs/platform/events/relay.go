package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
)

// RelayConfig configures a Relay. Pool, JetStream and Source are required.
type RelayConfig struct {
	// Pool reaches the service's schema (search_path), where Migrations() ran.
	Pool *pgxpool.Pool
	// JetStream publishes; a stream must capture the outbox subjects (EnsureStream).
	JetStream jetstream.JetStream
	// Source is ce-source, e.g. "plinth/auth".
	Source string
	// Logger; nil discards.
	Logger *slog.Logger
	// PollInterval is the fallback when a notification is missed; default 2s.
	PollInterval time.Duration
	// BatchSize bounds the rows locked and published per transaction; default 100.
	BatchSize int
	// PublishTimeout bounds the wait for one PubAck; default 5s.
	PublishTimeout time.Duration
	// MinBackoff and MaxBackoff bound the retry delay after a failure; default 100ms, 30s.
	MinBackoff, MaxBackoff time.Duration
	// Retention is how long sent rows stay for inspection before deletion; default 24h.
	Retention time.Duration
	// Stream is the stream the subjects land in. With it, the relay makes sure events it
	// may already have published are not stored twice when it republishes them after the
	// stream's duplicate window (see recover); without it, that check is skipped.
	Stream string
	// DuplicateWindow is the stream's duplicate window (StreamOptions.Duplicates); default
	// 10m, EnsureStream's default.
	DuplicateWindow time.Duration
	// EnsureStream, when set, runs before the first publish and again after the stream was
	// found missing, until it succeeds: a service starts while NATS is away.
	EnsureStream func(context.Context) error
}

// Relay publishes outbox rows to JetStream. Several replicas may run against one
// schema: rows are claimed with FOR UPDATE SKIP LOCKED. Order is kept within one relay
// (rows are published in id order, a batch stops at the first failure); across
// replicas it is not.
type Relay struct {
	cfg RelayConfig
	log *slog.Logger

	wake        chan struct{}
	reconnected chan struct{}
	pending     atomic.Int64
	published   atomic.Uint64
	failures    atomic.Uint64
	parked      atomic.Uint64
}

// RelayStats are counters for monitoring.
type RelayStats struct {
	// Pending is the number of unsent rows at the last check.
	Pending int64
	// Published counts events acknowledged by JetStream since start.
	Published uint64
	// Failures counts failed publish attempts (each followed by a backoff).
	Failures uint64
	// Parked counts events moved to outbox_dead_letters since start.
	Parked uint64
}

// NewRelay validates cfg and applies defaults.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	switch {
	case cfg.Pool == nil:
		return nil, errors.New("events: RelayConfig.Pool is required")
	case cfg.JetStream == nil:
		return nil, errors.New("events: RelayConfig.JetStream is required")
	case cfg.Source == "":
		return nil, errors.New("events: RelayConfig.Source (ce-source, e.g. \"plinth/auth\") is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.PollInterval, 2*time.Second)
	def(&cfg.PublishTimeout, 5*time.Second)
	def(&cfg.MinBackoff, 100*time.Millisecond)
	def(&cfg.MaxBackoff, 30*time.Second)
	def(&cfg.Retention, 24*time.Hour)
	def(&cfg.DuplicateWindow, 10*time.Minute)
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Relay{cfg: cfg, log: log.With("component", "outbox-relay"), wake: make(chan struct{}, 1), reconnected: make(chan struct{}, 1)}, nil
}

// Stats returns the current counters.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Pending: r.pending.Load(), Published: r.published.Load(), Failures: r.failures.Load(), Parked: r.parked.Load()}
}

// Reconnected tells the relay NATS is back, so it retries at once instead of waiting out its
// backoff; the Publisher wires it to the connection's reconnect handler.
func (r *Relay) Reconnected() {
	select {
	case r.reconnected <- struct{}{}:
	default:
	}
}

// Run publishes until ctx is done, then returns nil. It fails only when the outbox is
// unusable (schema missing); publish errors are retried with backoff forever, and events no
// retry can deliver are parked (outbox_dead_letters).
func (r *Relay) Run(ctx context.Context) error {
	schema, err := r.schema(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.listen(ctx, schema) })
	defer wg.Wait()

	bo := backoff.Backoff{Min: r.cfg.MinBackoff, Max: r.cfg.MaxBackoff}
	var lastPrune time.Time
	ready := false
	for ctx.Err() == nil {
		if !ready {
			if err := r.prepare(ctx); err != nil {
				r.failures.Add(1)
				d := bo.Next()
				r.log.Warn("NATS not ready for events yet; they wait in the outbox", "err", err, "retry_in", d)
				backoff.Sleep(ctx, d, r.reconnected)
				continue
			}
			ready = true
		}
		n, err := r.publishBatch(ctx)
		r.refreshPending(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			r.failures.Add(1)
			if errors.Is(err, jetstream.ErrNoStreamResponse) {
				ready = false // the stream is gone: ensure it again
			}
			d := bo.Next()
			r.log.Warn("publishing outbox events failed; retrying", "err", err, "retry_in", d, "pending", r.pending.Load())
			backoff.Sleep(ctx, d, r.reconnected)
			continue
		}
		bo.Reset()
		if n == r.cfg.BatchSize {
			continue // more may be waiting
		}
		if time.Since(lastPrune) >= r.cfg.Retention/10 {
			r.prune(ctx)
			lastPrune = time.Now()
		}
		t := time.NewTimer(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-r.reconnected:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

// prepare makes the relay ready to publish: the stream exists, and events an earlier run may
// have published without recording it are marked sent (recover).
func (r *Relay) prepare(ctx context.Context) error {
	if !r.cfg.JetStream.Conn().IsConnected() {
		return errNATSDisconnected
	}
	if r.cfg.EnsureStream != nil {
		if err := r.cfg.EnsureStream(ctx); err != nil {
			return err
		}
	}
	return r.recover(ctx)
}

// schema finds the schema the pool's search_path selects; the relay ignores
// notifications for other schemas.
func (r *Relay) schema(ctx context.Context) (string, error) {
	var schema *string
	if err := r.cfg.Pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", fmt.Errorf("events: relay: %w", err)
	}
	if schema == nil {
		return "", errors.New("events: relay: the pool's search_path names no existing schema; open it with pg.Open and events.Migrations()")
	}
	var ok bool
	if err := r.cfg.Pool.QueryRow(ctx, "SELECT to_regclass('outbox') IS NOT NULL").Scan(&ok); err != nil {
		return "", fmt.Errorf("events: relay: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("events: relay: no outbox table in schema %s; pass events.Migrations() to pg.Open", *schema)
	}
	return *schema, nil
}

func (r *Relay) refreshPending(ctx context.Context) {
	var n int64
	if err := r.cfg.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE sent_at IS NULL").Scan(&n); err == nil {
		r.pending.Store(n)
	}
}

// prune deletes rows sent longer than Retention ago.
func (r *Relay) prune(ctx context.Context) {
	tag, err := r.cfg.Pool.Exec(ctx, "DELETE FROM outbox WHERE sent_at < now() - make_interval(secs => $1)",
		r.cfg.Retention.Seconds())
	if err != nil {
		r.log.Warn("pruning sent outbox rows failed", "err", err)
		return
	}
	if n := tag.RowsAffected(); n > 0 {
		r.log.Debug("pruned sent outbox rows", "rows", n)
	}
}
