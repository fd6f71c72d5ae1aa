package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	"github.com/plinth-dev/plinth/libs/platform/server"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	cnpgigrpc "github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/grpc"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// App is a running plugin server.
type App struct {
	srv      *server.Server
	operator *operatorSide
}

// Open loads the stores (credentials from environ), migrates the catalog and registers the
// CNPG-I services; Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger, environ []string) (_ *App, err error) {
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()
	stores, err := loadStores(cfg, environ)
	if err != nil {
		return nil, err
	}
	for _, name := range stores.Names() {
		st, _ := stores.Get(name)
		log.Info("object store", "name", name, "default", name == stores.Default(), "store", st)
	}
	cat, pool, err := catalog.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("open the catalog database: %w", err)
	}
	closers = append(closers, pool.Close)
	svc, err := wal.NewService(cat, wal.Options{SpoolDir: cfg.SpoolDir, Logger: log})
	if err != nil {
		return nil, err
	}
	closers = append(closers, svc.Close)
	op, err := openOperatorSide(ctx, cfg, log, pool, stores)
	if err != nil {
		return nil, err
	}
	closers = append(closers, op.close)
	srv, err := server.New(server.Options{
		Name: "cnpgi-plugin", GRPCAddr: cfg.GRPCAddr, AdminAddr: cfg.AdminAddr, Logger: log,
		ShutdownTimeout: cfg.ShutdownTimeout, GRPCOptions: op.grpcOptions(),
	})
	if err != nil {
		return nil, err
	}
	closers = append(closers, srv.Close)
	meta := cnpgigrpc.Metadata{Name: cfg.PluginName, Version: version(), Manifest: map[string]string{
		"objectStores": strings.Join(stores.Names(), ","), "defaultObjectStore": stores.Default(),
	}}
	// Capabilities list exactly the services registered here: the operator calls the
	// GetCapabilities of every service it is told of.
	services := []identityv1.PluginCapability_Service_Type{identityv1.PluginCapability_Service_TYPE_WAL_SERVICE}
	opServices, err := op.register(srv)
	if err != nil {
		return nil, err
	}
	services = append(services, opServices...)
	bkServices, err := registerBackup(srv.GRPC(), cfg, log, cat, stores)
	if err != nil {
		return nil, err
	}
	services = append(services, bkServices...)
	identityv1.RegisterIdentityServer(srv.GRPC(), cnpgigrpc.NewIdentityServer(meta, services, cat.Ping))
	walv1.RegisterWALServer(srv.GRPC(), cnpgigrpc.NewWALServer(svc, stores, cfg.PluginName, cfg.WALTimeout, log))
	srv.AddReadiness("postgres", cat.Ping)
	srv.OnClose("postgres", func(context.Context) error { pool.Close(); return nil })
	// Registered last, so it runs first: read-ahead downloads stop before the pool closes.
	srv.OnClose("wal", func(context.Context) error { svc.Close(); return nil })
	return &App{srv: srv, operator: op}, nil
}

// Addr is the bound gRPC address (unix:///… for the plugin socket).
func (a *App) Addr() string { return a.srv.Addr() }

// Run serves until ctx ends or a signal arrives, then shuts down gracefully.
func (a *App) Run(ctx context.Context) error {
	ctx, stop := a.operator.start(ctx, a.srv)
	return errors.Join(a.srv.Run(ctx), stop())
}

// loadStores reads the store configuration file, or, without one, configures a single POSIX
// store named "local" in DefaultStoreDir (what `make up` uses).
func loadStores(cfg Config, environ []string) (*objectstore.Registry, error) {
	f := &objectstore.File{
		DefaultStore: "local",
		Stores:       map[string]objectstore.StoreConfig{"local": {POSIX: &objectstore.POSIXConfig{Path: cfg.DefaultStoreDir}}},
	}
	if cfg.ConfigFile != "" {
		data, err := os.ReadFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("PLINTH_CNPGI_CONFIG: %w", err)
		}
		if f, err = objectstore.ParseFile(data); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.ConfigFile, err)
		}
	}
	reg, err := objectstore.Open(f, environ)
	if err != nil {
		return nil, fmt.Errorf("object stores: %w", err)
	}
	return reg, nil
}

// version is the module version the binary was built from, "devel" in a workspace build.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
