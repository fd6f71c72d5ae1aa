package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	vgrpc "github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Stream is the JetStream stream the vagrant-server publishes into; it captures
// plinth.vagrant.>.
const Stream = "PLINTH_VAGRANT"

// App is a running vagrant-server.
type App struct {
	log   *slog.Logger
	srv   *server.Server
	relay *events.Relay
}

// Open connects everything the service needs and registers its gRPC service; Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
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
	nc, err := events.Connect(cfg.NATSURL, "plinth-vagrant-server", log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if _, err := events.EnsureStream(ctx, js, Stream, []string{"plinth.vagrant.>"}, events.StreamOptions{}); err != nil {
		return nil, err
	}
	relay, err := events.NewRelay(events.RelayConfig{Pool: pool, JetStream: js, Source: "plinth/vagrant-server", Logger: log})
	if err != nil {
		return nil, err
	}
	api := vgrpc.NewServer(vgrpc.Options{
		Registry: registry.NewService(st, registry.Options{}),
		Tokens:   tokens.NewIssuer(st, nil),
		Logger:   log,
		Version:  version(),
	})
	srv, err := server.New(server.Options{
		Name: "vagrant-server", GRPCAddr: cfg.GRPCAddr, AdminAddr: cfg.AdminAddr, Logger: log,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Authenticate:    api.Authenticate,
		AuthExempt:      vgrpc.AuthExempt(),
	})
	if err != nil {
		return nil, err
	}
	vagrant.RegisterVagrantServer(srv.GRPC(), api)
	addReadiness(srv, pool, nc)
	if err := srv.Metrics().Register(relay.Collector()); err != nil {
		srv.Close()
		return nil, fmt.Errorf("register relay metrics: %w", err)
	}
	srv.OnClose("postgres", func(context.Context) error { pool.Close(); return nil })
	srv.OnClose("nats", func(context.Context) error { return nc.Drain() })
	return &App{log: log, srv: srv, relay: relay}, nil
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

// version is the module version this binary was built from, when it is a release (semver,
// which GetVersionInfo promises); empty otherwise, which upstream clients accept.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || !strings.HasPrefix(bi.Main.Version, "v") {
		return ""
	}
	return strings.TrimPrefix(bi.Main.Version, "v")
}

// Addr is the bound gRPC address.
func (a *App) Addr() string { return a.srv.Addr() }

// Run serves until ctx ends or a signal arrives, with the outbox relay alongside; it stops
// the relay before the connections it uses are closed.
func (a *App) Run(ctx context.Context) error {
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.relay.Run(bg); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("outbox relay stopped", "error", err)
		}
	})
	// Registered last, so it runs first: background work stops before NATS and Postgres close.
	a.srv.OnClose("background", func(context.Context) error { stop(); wg.Wait(); return nil })
	return a.srv.Run(ctx)
}
