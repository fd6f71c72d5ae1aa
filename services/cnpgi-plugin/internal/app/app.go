package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance/metrics"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/kube"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/reconciler"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Open assembles the plugin: its object stores (credentials from environ), the catalog
// database, the WAL service, its events (when NATS is configured), the CNPG-I services on the
// plugin socket and, when configured, on a mutual-TLS port; Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger, environ []string) (_ *service.Service, err error) {
	s, err := service.New(service.Options{Name: "cnpgi-plugin", Logger: log, Admin: cfg.Admin, ClientLimits: cfg.ClientLimits})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	stores, err := loadStores(cfg, environ)
	if err != nil {
		return nil, err
	}
	logStores(log, stores)
	var access reconciler.Access
	if cfg.Kubeconfig != "" || cfg.KubeInCluster {
		src, err := kube.NewObjectStores(kube.Options{Kubeconfig: cfg.Kubeconfig, Logger: log.With("source", "kubernetes")})
		switch {
		case err != nil && cfg.Kubeconfig == "":
			// A pod without a service account token still archives to configured stores.
			log.Warn("ObjectStore resources cannot be read (barmanObjectName is refused): no in-cluster credentials", "error", err)
		case err != nil:
			return nil, fmt.Errorf("PLINTH_CNPGI_KUBECONFIG: %w", err)
		default:
			stores.SetObjectStores(src)
			access = src
			log.Info("ObjectStore resources (barmancloud.cnpg.io/v1) are read from the Kubernetes API")
		}
	}
	pool, err := s.Postgres(ctx, cfg.DatabaseURL, catalog.Schema, catalog.Migrations)
	if err != nil {
		return nil, err
	}
	cat := catalog.New(pool)
	walService, err := wal.NewService(cat, wal.Options{SpoolDir: cfg.SpoolDir, Logger: log})
	if err != nil {
		return nil, err
	}
	// Read-ahead downloads use the pool: they stop before it closes.
	s.Defer("wal read-ahead", func(context.Context) error { walService.Close(); return nil })
	if err := openEvents(ctx, s, cfg, pool, cat); err != nil {
		return nil, err
	}
	tls, err := listenTLS(s, cfg, log)
	if err != nil {
		return nil, err
	}
	failures := &metrics.Failures{}
	srv, err := s.GRPC(cfg.GRPC, server.Options{GRPCOptions: grpcOptions(cfg, stores, failures)})
	if err != nil {
		return nil, err
	}
	p := plugin{cfg: cfg, log: log, pool: pool, catalog: cat, wal: walService, stores: stores, failures: failures, access: access}
	if err := p.register(srv.GRPC()); err != nil {
		return nil, err
	}
	if tls != nil {
		s.Go("mutual TLS listener", tls.serve(srv, log))
	}
	return s, nil
}

// loadStores reads the store configuration file, or, without one, configures a single POSIX
// store named "local" in DefaultStoreDir (what `make up` uses).
func loadStores(cfg Config, environ []string) (*stores.Registry, error) {
	f := &stores.File{
		DefaultStore: "local",
		Stores:       map[string]stores.StoreConfig{"local": {POSIX: &objectstore.POSIXConfig{Path: cfg.DefaultStoreDir}}},
	}
	if cfg.ConfigFile != "" {
		data, err := os.ReadFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("PLINTH_CNPGI_CONFIG: %w", err)
		}
		if f, err = stores.ParseFile(data); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.ConfigFile, err)
		}
	}
	reg, err := stores.Open(f, environ)
	if err != nil {
		return nil, fmt.Errorf("object stores: %w", err)
	}
	return reg, nil
}

func logStores(log *slog.Logger, stores *stores.Registry) {
	for _, name := range stores.Names() {
		st, _ := stores.Get(name)
		log.Info("object store", "name", name, "default", name == stores.Default(), "store", st)
	}
}

// version is the module version the binary was built from, "devel" in a workspace build.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
