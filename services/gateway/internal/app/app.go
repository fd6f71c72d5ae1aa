package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/gateway/internal/catalog"
	"github.com/plinth-dev/plinth/services/gateway/internal/front"
	"github.com/plinth-dev/plinth/services/gateway/internal/koor"
	"github.com/plinth-dev/plinth/services/gateway/internal/proxy"
	"github.com/plinth-dev/plinth/services/gateway/internal/signin"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// Options are what the gateway serves beyond the route table.
type Options struct {
	// Console, when set, serves the GET requests on the gateway's port that are not RPCs
	// (the web console); without it they get 404.
	Console http.Handler
}

// Gateway is an assembled gateway: Service runs it, Addr is where it listens.
type Gateway struct {
	Service  *service.Service
	lis      net.Listener
	koorLis  net.Listener
	backends *proxy.Backends
}

// Addr is the bound address of the gateway's port ("127.0.0.1:8080").
func (g *Gateway) Addr() string { return g.lis.Addr().String() }

// KoorAddr is the bound address of the Koor UI's port, "" when it is off.
func (g *Gateway) KoorAddr() string {
	if g.koorLis == nil {
		return ""
	}
	return g.koorLis.Addr().String()
}

// gcPercent is the gateway's GOGC unless the environment sets one. The gateway's live heap
// is small (connections, the route table, the token cache) and every proxied call allocates
// ~13 KiB in grpc-go's two transports, so at Go's default of 100 it collects every few
// hundred calls; 400 lets the heap grow to five times the live heap (tens of MiB) and takes
// a fifth off the gateway's CPU per call (bench/gateway.sh).
const gcPercent = 400

// memoryLimit is the gateway's soft memory limit unless the environment sets GOMEMLIMIT: with
// GOGC at 400 the heap may grow to five times the live heap, so a burst (many large messages
// at once) would otherwise be kept until the next, late collection. Past the limit the GC
// runs as often as it must and returns memory to the OS.
const memoryLimit = 256 << 20

// Main runs the gateway binary.
func Main(ctx context.Context, args, environ []string, o Options) error {
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		debug.SetGCPercent(gcPercent)
	}
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "GOMEMLIMIT=") }) {
		debug.SetMemoryLimit(memoryLimit)
	}
	cfg := Defaults()
	return service.Main(ctx, service.Binary{Name: "gateway", Config: &cfg,
		Open: func(ctx context.Context, log *slog.Logger) (*service.Service, error) {
			g, err := Open(ctx, cfg, log, o)
			if err != nil {
				return nil, err
			}
			log.Info("gateway listening", "addr", g.Addr(), "koor_addr", g.KoorAddr(), "backends", g.backends.Names())
			return g.Service, nil
		}}, args, environ)
}

// Open assembles the gateway: backend connections, the token verifier (auth's CheckToken,
// cache kept in step with revocations on NATS), the gRPC server with the proxy, health and
// reflection, and the HTTP port in front of it. Run serves.
func Open(ctx context.Context, cfg Config, log *slog.Logger, o Options) (_ *Gateway, err error) {
	s, err := service.New(service.Options{Name: "gateway", Logger: log, Admin: cfg.Admin})
	if err != nil {
		return nil, err
	}
	defer s.CloseOnError(&err)

	cat, err := catalog.Load()
	if err != nil {
		return nil, err
	}
	conns, err := dialBackends(s, cfg, log)
	if err != nil {
		return nil, err
	}
	verifier, err := openVerifier(s, cfg, conns[routes.Auth], log)
	if err != nil {
		return nil, err
	}
	calls, err := proxy.NewLog(log, s.Metrics(), server.DefaultSlowCall, cfg.LogCalls == server.LogAllCalls)
	if err != nil {
		return nil, fmt.Errorf("register gateway metrics: %w", err)
	}
	backends := proxy.NewBackends(conns, BackendEnv)
	px := proxy.New(proxy.Options{
		Backends: backends, Methods: cat, Auth: verifier,
		UnaryTimeout: cfg.UnaryTimeout, Lifetime: s.Lifetime(), Log: calls,
		TracerProvider: tracerProvider(cfg), Propagator: telemetry.Propagator(),
	})
	clientCalls := netlimit.NewCalls(netlimit.CallLimits{PerClient: cfg.MaxCallsPerClient, Setting: envMaxCallsPerClient})
	gs, hs := newGRPCServer(px, cat, cfg, clientCalls, log)
	// OpenID sign-in's browser routes (console and Koor), and Koor's list of providers: both
	// ask auth, through the same connection as the proxy's.
	pages := http.NewServeMux()
	var providers koor.Providers
	if authConn := conns[routes.Auth]; authConn != nil {
		signin.Routes(pages, authConn, log)
		providers = koorProviders(authConn)
	}
	h, err := front.New(front.Options{
		GRPC: gs, Services: append(cat.Services(), healthpb.Health_ServiceDesc.ServiceName),
		CORSOrigins: cfg.CORSOrigins, Console: o.Console, MaxMessageBytes: cfg.MaxMessageBytes,
		Endpoints: koor.Endpoints(version(), providers, log), Pages: pages,
	})
	if err != nil {
		return nil, err
	}
	// The port's caps per client address and in total (libs/platform/netlimit, shared with
	// every service's gRPC port), counted in plinth_gateway_connections,
	// plinth_gateway_connections_refused_total{limit} and plinth_gateway_calls_refused_total;
	// refusals are counted, never logged: the gateway is the edge, where a flood is expected.
	portConns := netlimit.NewConns(netlimit.ConnLimits{PerClient: cfg.MaxConnsPerClient, Total: cfg.MaxConns,
		PerClientSetting: envMaxConnsPerClient, TotalSetting: envMaxConns})
	if err := netlimit.Register(s.Metrics(), "plinth_gateway", "the gateway's port", portConns, clientCalls); err != nil {
		return nil, err
	}
	g := &Gateway{Service: s, backends: backends}
	if g.lis, err = listen(s, "gateway", cfg.GRPCAddr); err != nil {
		return nil, err
	}
	// Koor's UI on a port of its own, with the same /api surface beside it (the UI calls its
	// own origin): its build at /, as Plinth's console is at / on the gateway's port.
	var koorH *front.Handler
	if cfg.KoorAddr != "" {
		ui, err := koor.UI(cfg.KoorUIDir)
		if err != nil {
			return nil, err
		}
		koorH = h.WithConsole(ui)
		if g.koorLis, err = listen(s, "koor", cfg.KoorAddr); err != nil {
			return nil, err
		}
	}
	// Shutdown begins by ending Lifetime: health says NOT_SERVING, streams end, and the ports
	// stop taking calls, finishing in-flight ones within the shutdown deadline. Both ports
	// count against the same connection caps.
	serve := func(lis net.Listener, h http.Handler) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			serveCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(s.Lifetime(), cancel)
			defer stop()
			return front.Serve(serveCtx, lis, h, gs, front.ServeOptions{
				Grace: cfg.ShutdownTimeout, IdleTimeout: cfg.IdleTimeout, Conns: portConns,
			})
		}
	}
	s.Go("gateway", func(ctx context.Context) error {
		go func() {
			<-s.Lifetime().Done()
			hs.Shutdown()
		}()
		return serve(g.lis, h)(ctx)
	})
	if koorH != nil {
		s.Go("koor", serve(g.koorLis, koorH))
	}
	return g, nil
}

// dialBackends connects to every configured backend: with mutual TLS those BackendTLS
// names (their files re-read when they change), plaintext the others; each through a pool of
// connections (connPool), opened as the calls in progress outgrow one.
func dialBackends(s *service.Service, cfg Config, log *slog.Logger) (map[string]grpc.ClientConnInterface, error) {
	withTLS, err := cfg.BackendTLS()
	if err != nil {
		return nil, err
	}
	if cfg.BackendTLSDir != "" {
		log.Info("backends dialled with mutual TLS", "backends", tlsBackendNames(withTLS), "tls_dir", cfg.BackendTLSDir)
	}
	conns := map[string]grpc.ClientConnInterface{}
	for name, addr := range cfg.Backends() {
		opts := []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(min(cfg.MaxMessageBytes, routes.MaxRequestBytes(name))))}
		if files, ok := withTLS[name]; ok {
			client, err := mtls.NewClient(files, log.With("backend", name))
			if err != nil {
				return nil, fmt.Errorf("PLINTH_GATEWAY_BACKEND_TLS_DIR: %s: %w", name, err)
			}
			opts = append(opts, grpc.WithTransportCredentials(client.Credentials()))
		}
		pool := make([]*grpc.ClientConn, backendConns)
		for i := range pool {
			if pool[i], err = s.Dial(name, addr, opts...); err != nil {
				return nil, err
			}
		}
		conns[name] = newConnPool(pool, streamsPerConn)
	}
	return conns, nil
}

// listen opens the port addr, closed when s closes.
func listen(s *service.Service, name, addr string) (net.Listener, error) {
	network, address, err := config.ParseListenAddr(addr)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	closeLis := sync.OnceValue(lis.Close)
	s.Defer(name+" listener", func(context.Context) error {
		if err := closeLis(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	return lis, nil
}

// version is the gateway's module version as Go's build recorded it ("(devel)" for a build
// from a checkout), which Koor's UI shows as the server's.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// tracerProvider is the one telemetry.Setup installed when traces are exported, else nil:
// the gateway then passes the client's trace context through without spans of its own.
func tracerProvider(cfg Config) trace.TracerProvider {
	if cfg.OTLPEndpoint == "" {
		return nil
	}
	return otel.GetTracerProvider()
}

// openVerifier checks tokens with auth. With NATS it follows auth's revocations and may cache
// auth's answers; without NATS a cached answer could outlive a revocation, so it asks auth on
// every call.
func openVerifier(s *service.Service, cfg Config, authConn grpc.ClientConnInterface, log *slog.Logger) (proxy.Authenticator, error) {
	if authConn == nil {
		log.Warn("no auth backend (PLINTH_AUTH_ADDR): calls of token routes are refused with Unavailable")
		return nil, nil
	}
	checker := authn.NewGRPCChecker(authConn, 0)
	if cfg.NATSURL == "" {
		log.Warn("no NATS (PLINTH_NATS_URL): every token is checked with auth on every call")
		return authn.NewVerifier(checker, authn.Options{Logger: log})
	}
	_, js, err := s.NATS(cfg.NATS)
	if err != nil {
		return nil, err
	}
	return s.Verifier(checker, js, authn.Options{CacheTTL: cfg.TokenCacheTTL})
}

// newGRPCServer builds the gateway's gRPC server: the proxy for every routed call, the
// gateway's own health, and reflection over every routed service's descriptors. calls
// counts each client's calls right after the proxy's request checks (which must come first:
// grpc-go decodes a unary request before any interceptor, and only they take its note), so
// a call over its cap costs little more.
func newGRPCServer(px *proxy.Proxy, cat *catalog.Catalog, cfg Config, calls *netlimit.Calls, log *slog.Logger) (*grpc.Server, *health.Server) {
	rec := recovery.WithRecoveryHandlerContext(server.RecoverPanic(log))
	opts := append(px.ServerOptions(), calls.ServerOptions()...)
	opts = append(opts,
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(rec)),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(rec)),
		grpc.MaxHeaderListSize(front.MaxHeaderListBytes),
	)
	opts = append(opts, front.ServerOptions(cfg.MaxMessageBytes, cfg.IdleTimeout)...)
	gs := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	own := gs.GetServiceInfo // health now; reflection once registered below
	ro := reflection.ServerOptions{Services: catalog.ServiceInfoFunc(func() map[string]grpc.ServiceInfo {
		return cat.ServiceInfo(own())
	})}
	reflectionv1.RegisterServerReflectionServer(gs, reflection.NewServerV1(ro))
	reflectionv1alpha.RegisterServerReflectionServer(gs, reflection.NewServer(ro))
	return gs, hs
}
