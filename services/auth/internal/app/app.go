package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	authgrpc "github.com/plinth-dev/plinth/services/auth/internal/grpc"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// Stream is the JetStream stream auth publishes into; it captures plinth.auth.>.
const Stream = "PLINTH_AUTH"

// App is a running auth service.
type App struct {
	cfg   Config
	log   *slog.Logger
	srv   *server.Server
	relay *events.Relay
	store *store.Store
}

// Open connects everything the service needs and registers its gRPC services; Run serves.
// stdout receives the generated first admin password, once, outside the JSON log.
func Open(ctx context.Context, cfg Config, log *slog.Logger, stdout io.Writer) (_ *App, err error) {
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	st, pool, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	closers = append(closers, pool.Close)
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{
		URL: cfg.NATSURL, Service: "auth", Stream: Stream, Subjects: []string{"plinth.auth.>"}, Pool: pool, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	nc, relay := pub.Conn, pub.Relay
	closers = append(closers, nc.Close)
	svc, err := identity.NewService(st, identity.Options{Hash: cfg.HashParams(), Lockout: cfg.Lockout(), TokenTTL: cfg.TokenTTL})
	if err != nil {
		return nil, err
	}
	if err := bootstrap(ctx, svc, cfg.AdminPassword, log, stdout); err != nil {
		return nil, err
	}
	clients, err := authgrpc.NewClientAddress(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{
		Name: "auth", GRPCAddr: cfg.GRPCAddr, AdminAddr: cfg.AdminAddr, Logger: log,
		ShutdownTimeout: cfg.ShutdownTimeout,
	})
	if err != nil {
		return nil, err
	}
	public := cfg.PublicPaths
	if len(public) == 0 {
		public = authgrpc.DefaultPublicPaths()
	}
	authpb.RegisterAuthServiceServer(srv.GRPC(), authgrpc.NewAuthServer(svc, clients, log))
	authv3.RegisterAuthorizationServer(srv.GRPC(), authgrpc.NewExtAuthzServer(svc, public, log))
	addReadiness(srv, pool, nc)
	srv.Metrics().MustRegister(relay.Collector())
	srv.OnClose("postgres", func(context.Context) error { pool.Close(); return nil })
	srv.OnClose("nats", func(context.Context) error { return nc.Drain() })
	return &App{cfg: cfg, log: log, srv: srv, relay: relay, store: st}, nil
}

func addReadiness(srv *server.Server, pool *pgxpool.Pool, nc *nats.Conn) {
	srv.AddReadiness("postgres", pool.Ping)
	srv.AddReadiness("nats", func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected")
		}
		return nil
	})
}

// Addr is the bound gRPC address.
func (a *App) Addr() string { return a.srv.Addr() }

// bootstrap creates the first user, admin, when there are none. A generated password goes to
// stdout exactly once, never to the (possibly shipped) JSON log.
func bootstrap(ctx context.Context, svc *identity.Service, password string, log *slog.Logger, stdout io.Writer) error {
	generated, created, err := svc.Bootstrap(ctx, password)
	if err != nil {
		return fmt.Errorf("create first user: %w", err)
	}
	if created {
		log.Info("created the first user", "username", "admin", "password_generated", generated != "")
		if generated != "" {
			fmt.Fprintf(stdout, "\nFirst user created: admin / %s\nThis password is shown once; change it with `auth users passwd admin`.\n\n", generated)
		}
	}
	return nil
}

// Run serves until ctx ends or a signal arrives,
// with the outbox relay and the purge job running alongside; it stops them before the
// connections they use are closed.
func (a *App) Run(ctx context.Context) error {
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.relay.Run(bg); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("outbox relay stopped", "error", err)
		}
	})
	wg.Go(func() { a.purge(bg) })
	// Registered last, so it runs first: background work stops before NATS and Postgres close.
	a.srv.OnClose("background", func(context.Context) error { stop(); wg.Wait(); return nil })
	return a.srv.Run(ctx)
}

// purge deletes tokens no cache can still hold and idle failure counters, periodically.
func (a *App) purge(ctx context.Context) {
	t := time.NewTicker(a.cfg.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		n, err := a.store.Purge(ctx, now.Add(-time.Hour), now.Add(-a.cfg.Lockout().Forget))
		if err != nil && ctx.Err() == nil {
			a.log.Warn("purge failed", "error", err)
		} else if n > 0 {
			a.log.Info("purged expired tokens and stale counters", "rows", n)
		}
	}
}
