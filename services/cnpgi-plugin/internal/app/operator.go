package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	metricsv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/metrics/v1"
	operatorv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator/v1"
	lifecyclev1 "github.com/plinth-dev/plinth/libs/api/cnpgi/operator_lifecycle/v1"
	reconcilerv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/reconciler/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/server"

	cnpgievents "github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	cnpgigrpc "github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/grpc"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/lifecycle"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/metrics"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/reconciler"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/tlsconfig"
)

// Stream is the JetStream stream the plugin publishes into; it captures plinth.cnpgi.>.
const Stream = "PLINTH_CNPGI"

// operatorSide wires what OperatorConfig configures, beside the WAL service: the operator's
// CNPG-I services, the mutual-TLS listener, archive-failure counts and the outbox relay with
// the WAL announcer.
type operatorSide struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	stores   *objectstore.Registry
	failures *metrics.Failures

	creds  *tlsconfig.PerListener // nil without TLSAddr
	tlsLis net.Listener

	nc        *nats.Conn // nil without PLINTH_NATS_URL: nothing is published
	relay     *events.Relay
	announcer *cnpgievents.Announcer
}

// openOperatorSide binds the TLS listener and connects to NATS, so that both fail the start.
func openOperatorSide(ctx context.Context, cfg Config, log *slog.Logger, pool *pgxpool.Pool, stores *objectstore.Registry) (_ *operatorSide, err error) {
	o := &operatorSide{cfg: cfg, log: log, pool: pool, stores: stores, failures: &metrics.Failures{}}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	if cfg.TLSAddr != "" {
		files := tlsconfig.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, ClientCA: cfg.TLSClientCA}
		tlsServer, err := tlsconfig.NewServer(files, log)
		if err != nil {
			return nil, fmt.Errorf("PLINTH_CNPGI_TLS_*: %w", err)
		}
		o.creds = tlsconfig.NewPerListener(tlsServer.Config())
		if o.tlsLis, err = net.Listen("tcp", cfg.TLSAddr); err != nil {
			return nil, fmt.Errorf("PLINTH_CNPGI_TLS_ADDR: %w", err)
		}
	}
	if cfg.NATSURL == "" {
		log.Warn("PLINTH_NATS_URL is not set: plinth.cnpgi events are not published")
		return o, nil
	}
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{
		URL: cfg.NATSURL, Service: "cnpgi-plugin", Stream: Stream, Subjects: []string{"plinth.cnpgi.>"}, Pool: pool, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	o.nc, o.relay = pub.Conn, pub.Relay
	o.announcer = cnpgievents.NewAnnouncer(pool, cnpgievents.Options{Batch: cfg.WALEventBatch, Interval: cfg.WALEventInterval, Logger: log})
	return o, nil
}

// grpcOptions are the server options the operator side needs: the per-listener credentials
// and the interceptor counting failed archive calls.
func (o *operatorSide) grpcOptions() []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(cnpgigrpc.CountArchiveFailures(o.cfg.PluginName, o.stores, o.failures))}
	if o.creds != nil {
		opts = append(opts, grpc.Creds(o.creds))
	}
	return opts
}

// register registers the operator-side services and returns their identity capabilities.
// OperatorLifecycle, and the sidecar-injection capabilities that make the instance manager
// load the plugin's instance services, come only with a sidecar image.
func (o *operatorSide) register(srv *server.Server) ([]identityv1.PluginCapability_Service_Type, error) {
	g, hist, name := srv.GRPC(), history.NewReader(o.pool), o.cfg.PluginName
	rules := operator.Rules{Plugin: name, Stores: o.stores}
	gate := reconciler.NewGate(name, o.stores, reconciler.Options{RequeueAfter: o.cfg.RequeueAfter, Logger: o.log})
	operatorv1.RegisterOperatorServer(g, cnpgigrpc.NewOperatorServer(rules, o.stores, hist, o.log))
	reconcilerv1.RegisterReconcilerHooksServer(g, cnpgigrpc.NewReconcilerServer(gate, o.log))
	identityv1.RegisterPostgresServer(g, cnpgigrpc.NewPostgresServer(name, o.log))
	metricsv1.RegisterMetricsServer(g, cnpgigrpc.NewMetricsServer(name, o.stores, hist, o.failures, o.log))
	caps := []identityv1.PluginCapability_Service_Type{
		identityv1.PluginCapability_Service_TYPE_OPERATOR_SERVICE, identityv1.PluginCapability_Service_TYPE_RECONCILER_HOOKS,
		identityv1.PluginCapability_Service_TYPE_POSTGRES, identityv1.PluginCapability_Service_TYPE_METRICS,
	}
	if o.cfg.SidecarImage != "" {
		injector, err := lifecycle.NewInjector(lifecycle.Sidecar{
			Image: o.cfg.SidecarImage, PluginName: name, EnvSecret: o.cfg.SidecarEnvSecret, ConfigMap: o.cfg.SidecarConfigMap,
		})
		if err != nil {
			return nil, err
		}
		if o.cfg.SidecarEnvSecret == "" {
			o.log.Warn("PLINTH_CNPGI_SIDECAR_ENV_SECRET is not set: the injected sidecar gets no PLINTH_DATABASE_URL and starts only if its image provides one")
		}
		lifecyclev1.RegisterOperatorLifecycleServer(g, cnpgigrpc.NewLifecycleServer(injector, o.log))
		caps = append(caps, identityv1.PluginCapability_Service_TYPE_LIFECYCLE_SERVICE,
			identityv1.PluginCapability_Service_TYPE_INSTANCE_SIDECAR_INJECTION,
			identityv1.PluginCapability_Service_TYPE_INSTANCE_JOB_SIDECAR_INJECTION)
	}
	if o.nc != nil {
		if err := srv.Metrics().Register(o.relay.Collector()); err != nil {
			return nil, fmt.Errorf("register the relay's metrics: %w", err)
		}
		srv.AddReadiness("nats", func(context.Context) error {
			if !o.nc.IsConnected() {
				return errors.New("not connected")
			}
			return nil
		})
		srv.OnClose("nats", func(context.Context) error { return o.nc.Drain() })
	}
	return caps, nil
}

// start serves the TLS listener and runs the relay and the announcer until srv shuts down.
// The returned context ends when the TLS listener fails, which shuts srv down too; stop
// reports that failure after srv.Run returned.
func (o *operatorSide) start(ctx context.Context, srv *server.Server) (_ context.Context, stop func() error) {
	ctx, cancel := context.WithCancelCause(ctx)
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if o.tlsLis != nil {
		lis := o.creds.Listener(o.tlsLis)
		o.log.Info("serving mutual TLS for the operator", "tls_addr", o.tlsLis.Addr().String())
		go func() {
			// Serve returns nil after the graceful stop that srv.Run performs.
			if err := srv.GRPC().Serve(lis); err != nil {
				o.log.Error("the mutual TLS listener failed; shutting down", "error", err)
				cancel(fmt.Errorf("mutual TLS listener: %w", err))
			}
		}()
	}
	if o.nc != nil {
		wg.Go(func() {
			if err := o.relay.Run(bg); err != nil {
				o.log.Error("outbox relay stopped", "error", err)
			}
		})
		wg.Go(func() { _ = o.announcer.Run(bg) })
	}
	// Registered last, so it runs first: background work stops before NATS and Postgres close.
	srv.OnClose("events", func(context.Context) error { stopBG(); wg.Wait(); return nil })
	return ctx, func() error {
		err := context.Cause(ctx)
		cancel(nil)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil // the caller's context ended: a requested shutdown
		}
		return err
	}
}

// close releases what openOperatorSide acquired, when the plugin does not start.
func (o *operatorSide) close() {
	if o.tlsLis != nil {
		_ = o.tlsLis.Close() // nothing was served yet
	}
	if o.nc != nil {
		o.nc.Close()
	}
}
