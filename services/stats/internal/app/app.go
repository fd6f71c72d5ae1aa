package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/services/stats/internal/ceph"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	statsgrpc "github.com/plinth-dev/plinth/services/stats/internal/grpc"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
	"github.com/plinth-dev/plinth/services/stats/internal/kube"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

// Open assembles the stats service: its database, NATS, the token check against auth, the
// configured sources, the collector with its usage history, and the gRPC server; Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "stats", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
	if err != nil {
		return nil, err
	}
	_, js, err := s.NATS(cfg.NATS)
	if err != nil {
		return nil, err
	}
	verifier, err := s.AuthVerifier(cfg.AuthAddr, js, authn.Options{CacheTTL: cfg.TokenCacheTTL})
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	history := cluster.NewRecorder(st, cfg.recorderOptions())
	if err := history.Load(ctx, time.Now()); err != nil {
		return nil, err
	}
	colCfg := cluster.Config{Interval: cfg.RefreshInterval, Timeout: cfg.SourceTimeout, History: history, Logger: log}
	if err := openSources(s, cfg, &colCfg, st, pool, js); err != nil {
		return nil, err
	}
	col, err := cluster.NewCollector(colCfg)
	if err != nil {
		return nil, err
	}
	if err := s.Metrics().Register(col); err != nil {
		return nil, fmt.Errorf("register the collector's metrics: %w", err)
	}
	if a := s.Admin(); a != nil {
		a.AddDetail(func(context.Context) string { return sourceLines(col.Sources()) })
	}
	// Registered before the loops: unwinding runs it after they stopped, before the database
	// closes, so the last samples are kept.
	s.Defer("usage history", history.Flush)
	s.Go("collector", col.Run)
	s.Every("usage history", 5*time.Second, history.Flush)

	srv, err := s.GRPC(cfg.GRPC, server.Options{Authenticate: verifier.Authenticate})
	if err != nil {
		return nil, err
	}
	statspb.RegisterStatsServiceServer(srv.GRPC(), statsgrpc.NewStatsServer(col, log))
	koorstats.RegisterStatsServiceServer(srv.GRPC(), statsgrpc.NewStatsV1Server(col, log))
	statsv1.RegisterHistoryServiceServer(srv.GRPC(), statsgrpc.NewHistoryServer(history, st, log))
	statsv1.RegisterClusterServiceServer(srv.GRPC(), statsgrpc.NewClusterServer(col, log))
	return s, nil
}

// openSources adds the configured sources' readers (and the loops that feed them) to cfg.
func openSources(s *service.Service, cfg Config, colCfg *cluster.Config, st *store.Store, pool *pgxpool.Pool, js jetstream.JetStream) error {
	log := s.Logger()
	if cfg.CephURL != "" {
		cc, err := cfg.cephConfig()
		if err != nil {
			return err
		}
		src, err := ceph.New(cc)
		if err != nil {
			return err
		}
		colCfg.Ceph = src.ReadCeph
	}
	if cfg.kubeConfigured() {
		src, err := kube.New(kube.Config{Kubeconfig: cfg.Kubeconfig, Namespace: cfg.Namespace, Logger: log.With("source", "kubernetes")})
		if err != nil {
			return err
		}
		s.Go("kubernetes watches", func(ctx context.Context) error {
			src.Start(ctx)
			<-ctx.Done()
			src.Shutdown()
			return nil
		})
		colCfg.Kube, colCfg.KubeChanged = src.ReadKube, src.Changed()
	}
	if cfg.Inventory {
		handler := inventory.Handler{Store: st}
		for _, c := range inventory.Consumers(js, pool, handler, log) {
			s.Go("inventory "+c.Durable, func(ctx context.Context) error { return inventory.Run(ctx, c) })
		}
		colCfg.Inventory = inventory.Reader{Store: st, Misses: cfg.HeartbeatMisses}.ReadInventory
		s.Every("inventory forget", time.Hour, func(ctx context.Context) error {
			n, err := st.Forget(ctx, inventory.Forgetting{Before: time.Now().Add(-cfg.ForgetAfter)})
			if n > 0 {
				log.InfoContext(ctx, "forgot silent storage nodes and released machines", "rows", n, "silent_for", cfg.ForgetAfter)
			}
			return err
		})
	}
	return nil
}

// sourceLines are the sources' states for /readyz: a failing source does not make the service
// unready (it serves the source's last report), but says so here.
func sourceLines(states []cluster.SourceState) string {
	lines := make([]string, len(states))
	for i, st := range states {
		lines[i] = "source " + st.String()
	}
	return strings.Join(lines, "\n")
}
