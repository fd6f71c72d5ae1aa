package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// Main runs the vagrant-runner binary with its flags and environment until SIGINT or SIGTERM.
func Main(ctx context.Context, args, environ []string) error {
	var cfg Config
	if ok, err := config.LoadOrUsage(&cfg, args, environ, os.Stderr, ""); !ok {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "plinth-vagrant-runner",
		LogFormat: cfg.LogFormat, LogLevel: cfg.LogLevel, OTLPEndpoint: cfg.OTLPEndpoint})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	tel.Logger.Info("starting", "config", config.LogValue(&cfg))
	return run(ctx, cfg, tel.Logger)
}

// run wires the runner from a validated config and runs it with its admin server.
func run(ctx context.Context, cfg Config, log *slog.Logger) error {
	id, err := LoadID(cfg.RunnerID, cfg.StateDir)
	if err != nil {
		return err
	}
	subnet, err := netip.ParsePrefix(cfg.NetnsSubnet)
	if err != nil {
		return fmt.Errorf("PLINTH_VAGRANT_NETNS_SUBNET: %w", err)
	}
	nsp, err := netns.New(netns.Options{Bridge: cfg.NetnsBridge, Subnet: subnet, Logger: log})
	if err != nil {
		return err
	}
	if err := nsp.Check(ctx); err != nil {
		log.Warn("netns machines cannot work on this host; jobs on netns targets will fail", "problem", err.Error())
	}
	providers, err := provider.NewSet(nsp)
	if err != nil {
		return err
	}
	creds := NewCredentials(TokenSource(cfg.Token, cfg.tokenFile()))
	conn, err := Dial(cfg.ServerAddr, creds)
	if err != nil {
		return err
	}
	defer conn.Close()
	client := vagrant.NewVagrantClient(conn)
	exec, err := operation.New(operation.Options{Providers: providers, DefaultProvider: netns.Name, Server: client})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := NewMetrics(reg)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	r, err := New(Options{ID: id, ByIDOnly: cfg.ByIDOnly, Client: client, Credentials: creds, Executor: exec,
		BaseEnv: []string{"HOME=" + home}, Heartbeat: cfg.Heartbeat, ShutdownGrace: cfg.ShutdownTimeout,
		Metrics: metrics, Logger: log})
	if err != nil {
		return err
	}
	return serve(ctx, cfg.AdminAddr, reg, r, log)
}

// serve runs r and, unless disabled, the admin server beside it; it stops both when ctx ends.
func serve(ctx context.Context, adminAddr string, reg *prometheus.Registry, r *Runner, log *slog.Logger) error {
	if adminAddr == "" || adminAddr == config.AdminOff {
		return r.Run(ctx)
	}
	admin, err := ListenAdmin(adminAddr, reg, r.Status)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() { serveErr = admin.Serve() })
	log.Info("vagrant-runner serving", "admin", admin.Addr(), "runner_id", r.Status().ID)
	context.AfterFunc(ctx, func() { log.Info("vagrant-runner stopping"); admin.Drain() })
	runErr := r.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shutErr := admin.Shutdown(sctx)
	wg.Wait()
	return errors.Join(runErr, serveErr, shutErr)
}
