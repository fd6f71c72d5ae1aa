package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	metricsv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/metrics/v1"
	operatorv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator/v1"
	lifecyclev1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator_lifecycle/v1"
	reconcilerv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/reconciler/v1"
	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	cnpgiv1 "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	cnpgievents "github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance/metrics"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/lifecycle"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/reconciler"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// openEvents is the step that publishes the plugin's events — the outbox relay and the WAL
// announcer that batches the catalog's archived segments into events — when NATS is
// configured.
func openEvents(ctx context.Context, s *service.Service, cfg Config, pool *pgxpool.Pool, cat *catalog.Catalog) error {
	if cfg.NATSURL == "" {
		s.Logger().Warn("PLINTH_NATS_URL is not set: plinth.cnpgi events are not published")
		return nil
	}
	_, err := s.Publisher(ctx, cfg.NATS, events.PublisherConfig{
		Service: "cnpgi-plugin", Stream: events.StreamOf(&eventsv1.WALArchived{}), Pool: pool,
	})
	if err != nil {
		return err
	}
	announcer := cnpgievents.NewAnnouncer(cat, cnpgievents.Options{Batch: cfg.WALEventBatch, Interval: cfg.WALEventInterval, Logger: s.Logger()})
	s.Go("wal announcer", announcer.Run)
	return nil
}

// tlsListener is the mutual-TLS port the operator reaches the plugin on, beside the socket,
// in CloudNativePG's convention for TCP plugins (the Service's cnpg.io/pluginServerSecret and
// cnpg.io/pluginClientSecret): TLS 1.3, the operator's client certificate required, the files
// re-read when cert-manager renews the Secrets in place. The handshake happens on the
// listener, so the socket, which the instance manager dials without TLS, stays plaintext on
// the same gRPC server.
type tlsListener struct {
	lis net.Listener
}

// listenTLS is the step that binds the mutual-TLS port (nil without TLSAddr), so a bad
// certificate or a taken port fails the start.
func listenTLS(s *service.Service, cfg Config, log *slog.Logger) (*tlsListener, error) {
	if cfg.TLSAddr == "" {
		return nil, nil
	}
	files := mtls.ServerFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, ClientCA: cfg.TLSClientCA}
	tlsServer, err := mtls.NewServer(files, log)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_CNPGI_TLS_*: %w", err)
	}
	lis, err := net.Listen("tcp", cfg.TLSAddr)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_CNPGI_TLS_ADDR: %w", err)
	}
	s.Defer("mutual TLS port", func(context.Context) error {
		_ = lis.Close() // already closed once served; closing again has no consequence
		return nil
	})
	return &tlsListener{lis: tlsServer.Listener(lis)}, nil
}

// serve is the loop serving srv's services on the TLS port too; it ends with srv's stop.
func (t *tlsListener) serve(srv *server.Server, log *slog.Logger) func(context.Context) error {
	return func(context.Context) error {
		log.Info("serving mutual TLS for the operator", "tls_addr", t.lis.Addr().String())
		return srv.ServeOn(t.lis)
	}
}

// grpcOptions are the server options the plugin needs: the interceptor counting failed
// archive calls.
func grpcOptions(cfg Config, stores *stores.Registry, failures *metrics.Failures) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(instance.CountArchiveFailures(cfg.PluginName, stores, failures))}
}

// plugin is what the CNPG-I services are built from.
type plugin struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	catalog  *catalog.Catalog
	wal      *wal.Service
	stores   *stores.Registry
	failures *metrics.Failures
	// access grants Clusters' instances their ObjectStores; nil without the Kubernetes API.
	access reconciler.Access
}

// register registers every CNPG-I service on g, and Identity with exactly the capabilities
// registered: the operator calls the GetCapabilities of every service it is told of.
func (p plugin) register(g *grpc.Server) error {
	caps := []identityv1.PluginCapability_Service_Type{identityv1.PluginCapability_Service_TYPE_WAL_SERVICE}
	walv1.RegisterWALServer(g, instance.NewWALServer(p.wal, p.stores, instance.WALOptions{
		Plugin: p.cfg.PluginName, Timeout: p.cfg.WALTimeout, DataDirs: p.cfg.dataDirs(), Instance: p.cfg.instance(),
	}, p.log))
	opCaps, err := p.registerOperator(g)
	if err != nil {
		return err
	}
	bkCaps, err := registerBackup(g, p.cfg, p.log, p.catalog, p.stores)
	if err != nil {
		return err
	}
	caps = append(append(caps, opCaps...), bkCaps...)
	meta := operator.Metadata{Name: p.cfg.PluginName, Version: version(), Manifest: map[string]string{
		"objectStores": strings.Join(p.stores.Names(), ","), "defaultObjectStore": p.stores.Default(),
	}}
	identityv1.RegisterIdentityServer(g, operator.NewIdentityServer(meta, caps))
	// Plinth's own read-only view (not a CNPG-I service: no capability to declare).
	cnpgiv1.RegisterCatalogServiceServer(g, instance.NewCatalogServer(catalogView{history.NewReader(p.pool), p.catalog}, p.stores.Default(), p.failures, p.log))
	return nil
}

// catalogView reads summaries through history and base backups through the catalog.
type catalogView struct {
	*history.Reader
	cat *catalog.Catalog
}

// Backups lists a server's base backups, oldest first.
func (v catalogView) Backups(ctx context.Context, store, server string) ([]backup.Record, error) {
	return v.cat.Backups(ctx, store, server)
}

// registerOperator registers the operator-side services and returns their capabilities.
// OperatorLifecycle, and the sidecar-injection capabilities that make the instance manager
// load the plugin's instance services, come only with a sidecar image.
func (p plugin) registerOperator(g *grpc.Server) ([]identityv1.PluginCapability_Service_Type, error) {
	hist, name := history.NewReader(p.pool), p.cfg.PluginName
	rules := operator.Rules{Plugin: name, Stores: p.stores}
	gate := reconciler.NewGate(name, p.stores, reconciler.Options{RequeueAfter: p.cfg.RequeueAfter, ProbeTimeout: p.cfg.ProbeTimeout,
		Logger: p.log, Access: p.access})
	operatorv1.RegisterOperatorServer(g, operator.NewOperatorServer(rules, p.stores, hist, p.log))
	reconcilerv1.RegisterReconcilerHooksServer(g, operator.NewReconcilerServer(gate, p.log))
	identityv1.RegisterPostgresServer(g, instance.NewPostgresServer(name, p.log))
	metricsv1.RegisterMetricsServer(g, instance.NewMetricsServer(name, p.stores, hist, p.failures, p.log))
	caps := []identityv1.PluginCapability_Service_Type{
		identityv1.PluginCapability_Service_TYPE_OPERATOR_SERVICE, identityv1.PluginCapability_Service_TYPE_RECONCILER_HOOKS,
		identityv1.PluginCapability_Service_TYPE_POSTGRES, identityv1.PluginCapability_Service_TYPE_METRICS,
	}
	if p.cfg.SidecarImage == "" {
		return caps, nil
	}
	injector, err := lifecycle.NewInjector(lifecycle.Sidecar{
		Image: p.cfg.SidecarImage, PluginName: name, EnvSecret: p.cfg.SidecarEnvSecret, ConfigMap: p.cfg.SidecarConfigMap,
	})
	if err != nil {
		return nil, err
	}
	if p.cfg.SidecarEnvSecret == "" {
		p.log.Warn("PLINTH_CNPGI_SIDECAR_ENV_SECRET is not set: the injected sidecar gets no PLINTH_DATABASE_URL and starts only if its image provides one")
	}
	lifecyclev1.RegisterOperatorLifecycleServer(g, operator.NewLifecycleServer(injector, p.log))
	return append(caps, identityv1.PluginCapability_Service_TYPE_LIFECYCLE_SERVICE,
		identityv1.PluginCapability_Service_TYPE_INSTANCE_SIDECAR_INJECTION,
		identityv1.PluginCapability_Service_TYPE_INSTANCE_JOB_SIDECAR_INJECTION), nil
}
