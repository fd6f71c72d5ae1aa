package service

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// OpenPostgres opens a service's pool on its schema, migrated with the outbox tables
// (events.Migrations), then the extra library sets, then the service's own migrations (the
// NNN_name.up.sql files anywhere in migrations, typically a //go:embed of a migrations
// directory). Commands that use the database without running the service call it directly.
func OpenPostgres(ctx context.Context, url, schema string, migrations fs.FS, extra ...pg.MigrationSet) (*pgxpool.Pool, error) {
	sets := append([]pg.MigrationSet{events.Migrations()}, extra...)
	pool, err := pg.Open(ctx, url, schema, migrations, sets...)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return pool, nil
}

// Postgres is the step that opens the service's database (OpenPostgres), checks it for
// readiness as "postgres" and closes it at shutdown.
func (s *Service) Postgres(ctx context.Context, url, schema string, migrations fs.FS, extra ...pg.MigrationSet) (*pgxpool.Pool, error) {
	pool, err := OpenPostgres(ctx, url, schema, migrations, extra...)
	if err != nil {
		return nil, err
	}
	s.Defer("postgres", func(context.Context) error { pool.Close(); return nil })
	s.Ready("postgres", pool.Ping)
	return pool, nil
}

// Publisher is the step that connects the service to NATS for its events: the connection
// and the stream come up in the background (the service starts and serves while NATS is
// away; events wait in the outbox), the outbox relay runs as a loop, its metrics are
// exported, and the connection is drained at shutdown. NATS being away, or events parked as
// undeliverable, do not make the service unready — it still serves — but /readyz says so
// and plinth_nats_connected and plinth_outbox_dead_letters_total show it. n is the service's
// NATS setting (server and user); it replaces c.URL and c.Credentials.
func (s *Service) Publisher(ctx context.Context, n config.NATS, c events.PublisherConfig) (*events.Publisher, error) {
	cred, err := credentials(n)
	if err != nil {
		return nil, err
	}
	c.URL, c.Credentials = n.NATSURL, cred
	if c.Logger == nil {
		c.Logger = s.log
	}
	pub, err := events.OpenPublisher(ctx, c)
	if err != nil {
		return nil, err
	}
	s.Defer("nats", func(context.Context) error { return pub.Conn.Drain() })
	if err := s.registry.Register(pub.Relay.Collector()); err != nil {
		return nil, fmt.Errorf("register the outbox relay's metrics: %w", err)
	}
	if err := s.watchNATS(pub.Conn); err != nil {
		return nil, err
	}
	if a := s.admin; a != nil {
		a.AddDetail(func(ctx context.Context) string {
			var b strings.Builder
			if st := pub.Relay.Stats(); !pub.Conn.IsConnected() {
				fmt.Fprintf(&b, "warning: NATS is unreachable: %d events wait in the outbox (delayed, not lost)\n", st.Pending)
			}
			if n, err := pub.Relay.DeadLetters(ctx); err == nil && n > 0 {
				fmt.Fprintf(&b, "warning: %d undeliverable events parked in outbox_dead_letters\n", n)
			}
			return b.String()
		})
	}
	s.Go("outbox relay", pub.Relay.Run)
	return pub, nil
}

// watchNATS exports whether nc is connected as plinth_nats_connected.
func (s *Service) watchNATS(nc *nats.Conn) error {
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plinth_nats_connected",
		Help: "1 while the NATS connection is up; events wait in the outbox while it is 0."},
		func() float64 {
			if nc.IsConnected() {
				return 1
			}
			return 0
		})
	if err := s.registry.Register(g); err != nil {
		return fmt.Errorf("register the NATS metric: %w", err)
	}
	return nil
}

// Every registers a loop that calls fn every interval until shutdown. A failure is logged and
// the loop goes on: periodic work retries by nature, at the next tick.
func (s *Service) Every(name string, interval time.Duration, fn func(context.Context) error) {
	s.Go(name, func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "periodic work failed; retrying at the next tick", "loop", name, "error", err)
			}
		}
	})
}
