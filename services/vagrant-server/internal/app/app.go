package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	vgrpc "github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Stream is the JetStream stream the vagrant-server publishes into; it captures
// plinth.vagrant.>.
const Stream = "PLINTH_VAGRANT"

// App is a running vagrant-server.
type App struct {
	log         *slog.Logger
	srv         *server.Server
	relay       *events.Relay
	reaper      *jobqueue.Reaper
	endLifetime context.CancelFunc
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
	// Migrates the outbox, the job queue's tables and the service's own, in that order.
	st, pool, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	closers = append(closers, pool.Close)
	queue, notices, err := openJobs(ctx, cfg, pool, log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { notices.Close(); queue.Close() })
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{
		URL: cfg.NATSURL, Service: "vagrant-server", Stream: Stream, Subjects: []string{"plinth.vagrant.>"}, Pool: pool, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	nc, relay := pub.Conn, pub.Relay
	closers = append(closers, nc.Close)
	lifetime, endLifetime := context.WithCancel(context.Background())
	closers = append(closers, endLifetime)
	api := vgrpc.NewServer(vgrpc.Options{
		Registry:      registry.NewService(st, registry.Options{}),
		Tokens:        tokens.NewIssuer(st, nil),
		Jobs:          queue,
		Output:        st,
		OutputNotices: notices,
		Logger:        log,
		Version:       version(),
		Lifetime:      lifetime,
		JobsKept:      cfg.JobsKept,
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
	// Registered after the pool, so it runs before the pool closes.
	srv.OnClose("jobqueue", func(context.Context) error { notices.Close(); queue.Close(); return nil })
	return &App{log: log, srv: srv, relay: relay, reaper: jobqueue.NewReaper(queue, cfg.JobReapInterval),
		endLifetime: endLifetime}, nil
}

// openJobs starts this replica's job queue (its LISTEN connection) and the listener for new
// job output.
func openJobs(ctx context.Context, cfg Config, pool *pgxpool.Pool, log *slog.Logger) (*jobqueue.Queue, *joboutput.Listener, error) {
	queue, err := jobqueue.New(ctx, pool, jobqueue.Options{
		AckTimeout: cfg.JobAckTimeout, HeartbeatTimeout: cfg.JobHeartbeatTimeout, Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the job queue: %w", err)
	}
	notices, err := joboutput.Listen(ctx, pool, log)
	if err != nil {
		queue.Close()
		return nil, nil, fmt.Errorf("listen for job output: %w", err)
	}
	return queue, notices, nil
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

// Run serves until ctx ends or a signal arrives, with the outbox relay and the job reaper
// alongside; it stops them before the connections they use are closed.
func (a *App) Run(ctx context.Context) error {
	// The same signals the server stops on: when shutdown begins, long-lived streams end so
	// the graceful stop need not wait for them.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	context.AfterFunc(ctx, a.endLifetime)
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.relay.Run(bg); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Error("outbox relay stopped", "error", err)
		}
	})
	wg.Go(func() {
		if err := a.reaper.Run(bg); err != nil {
			a.log.Error("job reaper stopped", "error", err)
		}
	})
	// Registered last, so it runs first: background work stops before NATS and Postgres close.
	a.srv.OnClose("background", func(context.Context) error { stop(); wg.Wait(); return nil })
	return a.srv.Run(ctx)
}
