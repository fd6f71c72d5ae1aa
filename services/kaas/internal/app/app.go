package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/services/kaas/internal/access"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	kaasgrpc "github.com/plinth-dev/plinth/services/kaas/internal/grpc"
	"github.com/plinth-dev/plinth/services/kaas/internal/inspect"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/vagrant"
	"github.com/plinth-dev/plinth/services/kaas/internal/reconciler"
	"github.com/plinth-dev/plinth/services/kaas/internal/store"
)

// App is a running kaas: the service and its REST listener.
type App struct {
	*service.Service
	rest net.Listener
}

// RESTAddr is the bound REST address, or "" when the REST API is off.
func (a *App) RESTAddr() string {
	if a.rest == nil {
		return ""
	}
	return a.rest.Addr().String()
}

// Open assembles kaas: its database and events, the token check against auth, the
// providers, the cluster rules, the gRPC service and REST gateway, and the reconciler.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *App, err error) {
	s, err := service.New(service.Options{Name: "kaas", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
	if err != nil {
		return nil, err
	}
	pub, err := s.Publisher(ctx, cfg.NATS, events.PublisherConfig{Service: "kaas",
		Stream: events.StreamOf(&eventsv1.ClusterStatusChanged{}), Pool: pool})
	if err != nil {
		return nil, err
	}
	verifier, err := s.AuthVerifier(cfg.AuthAddr, pub.JetStream, authn.Options{})
	if err != nil {
		return nil, err
	}
	key, err := cfg.Key()
	if err != nil {
		return nil, err
	}
	box, err := pki.NewBox(key)
	if err != nil {
		return nil, err
	}
	vault := pki.NewVault(box)
	owner := cfg.instance(randomHex())
	providers, err := openProviders(s, cfg, owner)
	if err != nil {
		return nil, err
	}
	rules, err := cfg.Rules()
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	svc, err := cluster.NewService(st, rules, access.NewCredentials(vault, cfg.KubeconfigTTL), inspect.New(providers, vault, cfg.InspectTimeout, log), providers, providers.Default())
	if err != nil {
		return nil, err
	}
	srv, err := s.GRPC(cfg.GRPC, server.Options{Authenticate: verifier.Authenticate})
	if err != nil {
		return nil, err
	}
	kaaspb.RegisterClusterServer(srv.GRPC(), kaasgrpc.NewClusterServer(svc, log))
	kaasv1.RegisterClusterInfoServiceServer(srv.GRPC(), kaasgrpc.NewInfoServer(svc, st, providers, providers.Default(), log))

	rec, err := reconciler.New(st, vault, providers, reconciler.Options{Owner: owner, Workers: cfg.Workers, Lease: cfg.Lease,
		Poll: cfg.Poll, Resync: cfg.Resync, RetryMax: cfg.RetryMax, CallTimeout: cfg.CallTimeout,
		ProvisionTimeout: cfg.ProvisionTimeout, FailAfter: cfg.FailAfter, Logger: log})
	if err != nil {
		return nil, err
	}
	for _, c := range rec.Collectors() {
		if err := s.Metrics().Register(c); err != nil {
			return nil, err
		}
	}
	s.Go("reconciler", rec.Run)
	s.Go("reconciler wake-ups", func(ctx context.Context) error { return rec.Listen(ctx, pool, store.WakeChannel) })
	log.Info("kaas assembled", "instance", owner, "providers", providers.Names(), "default_provider", providers.Default())

	a := &App{Service: s}
	if cfg.RESTAddr != "" && cfg.RESTAddr != config.AdminOff {
		if a.rest, err = serveREST(s, cfg.RESTAddr, srv.Addr(), log); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// openProviders builds every configured provider.
func openProviders(s *service.Service, cfg Config, owner string) (*provider.Registry, error) {
	var ps []provider.Provider
	if cfg.MAAS.URL != "" {
		key, err := maas.ParseAPIKey(cfg.MAAS.APIKey)
		if err != nil {
			return nil, err
		}
		c, err := maas.NewClient(cfg.MAAS.URL, key, &http.Client{Timeout: cfg.CallTimeout}, "plinth-kaas/"+owner)
		if err != nil {
			return nil, err
		}
		ps = append(ps, maas.New(c, maas.Options{Pool: cfg.MAAS.Pool, Zone: cfg.MAAS.Zone, DistroSeries: cfg.MAAS.DistroSeries}))
	}
	if cfg.Vagrant.Addr != "" {
		conn, err := s.Dial("vagrant-server", cfg.Vagrant.Addr)
		if err != nil {
			return nil, err
		}
		bin, err := cfg.kubeBinDir()
		if err != nil {
			return nil, err
		}
		p, err := vagrant.New(vagrant.NewClient(conn, vagrant.TokenSource(cfg.Vagrant.Token, cfg.Vagrant.TokenFile), cfg.Vagrant.RunnerID), vagrant.Options{
			Basis: cfg.Vagrant.Basis, MachineDir: cfg.Vagrant.MachineDir, KubeBinDir: bin, Wait: cfg.Vagrant.Wait,
			Etcd: cfg.Vagrant.Etcd, KubeBuildStatus: cfg.Vagrant.KubeBuild})
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return provider.NewRegistry(cfg.Provider, ps...)
}

// serveREST serves upstream's REST paths on addr, calling the gRPC server at grpcAddr. It
// stops accepting when shutdown begins (before gRPC stops), letting requests in flight end.
func serveREST(s *service.Service, addr, grpcAddr string, log *slog.Logger) (net.Listener, error) {
	self, err := s.Dial("kaas (REST gateway)", grpcAddr)
	if err != nil {
		return nil, err
	}
	gw, err := kaasgrpc.NewGateway(self, log)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: gw, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10}
	s.Go("rest", func(ctx context.Context) error {
		done := make(chan error, 1)
		go func() { done <- hs.Serve(lis) }()
		select {
		case <-s.Lifetime().Done():
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return lis, nil
}

func randomHex() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
