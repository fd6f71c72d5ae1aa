// Package server runs a Plinth service's gRPC server the same way in every binary: one
// interceptor chain (recovery, logging with trace ids, metrics, auth), OpenTelemetry tracing,
// grpc.health.v1, server reflection, an admin HTTP server (/metrics, /healthz, /readyz), TCP
// or unix-socket listeners, and a graceful shutdown that drains calls and then closes the
// service's resources in reverse order.
//
//	s, err := server.New(server.Options{Name: "auth", GRPCAddr: cfg.GRPCAddr, ...})
//	authv1.RegisterAuthServiceServer(s.GRPC(), handler)
//	s.AddReadiness("postgres", pool.Ping)
//	s.OnClose("postgres", func(context.Context) error { pool.Close(); return nil })
//	return s.Run(ctx)
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// DefaultShutdownTimeout is used when Options.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 15 * time.Second

// Options configures New. Only Name and GRPCAddr are required.
type Options struct {
	// Name identifies the service in logs, e.g. "auth".
	Name string
	// GRPCAddr is "host:port" (port 0 picks a free port) or "unix:///abs/path.sock".
	GRPCAddr string
	// AdminAddr is the admin HTTP "host:port"; "" or "off" disables it.
	AdminAddr string
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Authenticate, when set, runs for every call except grpc.health.v1, reflection and
	// AuthExempt methods.
	Authenticate AuthFunc
	// AuthExempt lists full method names ("/pkg.Service/Method") that skip Authenticate,
	// such as a Login call.
	AuthExempt []string
	// ShutdownTimeout bounds the whole shutdown (drain, in-flight calls, closers); zero means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// DrainDelay is how long the server keeps serving after reporting NOT_SERVING, so load
	// balancers and health watchers stop sending new calls before it stops accepting them.
	DrainDelay time.Duration
	// TracerProvider creates the server spans; nil means the OpenTelemetry global.
	TracerProvider trace.TracerProvider
	// GRPCOptions are appended to the server's options, e.g. grpc.Creds for mutual TLS.
	GRPCOptions []grpc.ServerOption
}

// Server is a gRPC server plus its admin HTTP server. Register services on GRPC() before Run.
type Server struct {
	opts     Options
	log      *slog.Logger
	grpc     *grpc.Server
	health   *health.Server
	registry *prometheus.Registry
	metrics  *grpcprom.ServerMetrics

	lis        net.Listener
	socketPath string // set when listening on a unix socket, removed on shutdown
	admin      *http.Server
	adminLis   net.Listener

	mu       sync.Mutex
	checks   []namedFunc
	closers  []namedFunc
	started  atomic.Bool
	draining atomic.Bool
}

// namedFunc is a readiness check or a closer.
type namedFunc struct {
	name string
	fn   func(context.Context) error
}

// New builds the server and binds its listeners, so that Addr is known (also with port 0)
// and an address in use fails before anything else starts. Call Run, or Close if Run will
// not be called, to release the listeners.
func New(o Options) (*Server, error) {
	if o.Name == "" {
		return nil, errors.New("server: Options.Name is required (it names the service in logs)")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.ShutdownTimeout < 0 || o.DrainDelay < 0 {
		return nil, errors.New("server: ShutdownTimeout and DrainDelay must not be negative")
	}
	exempt, err := exemptSet(o.AuthExempt)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, log: o.Logger.With("service", o.Name), health: health.NewServer()}
	if err := s.newMetrics(); err != nil {
		return nil, err
	}
	s.grpc = grpc.NewServer(append(s.serverOptions(exempt), o.GRPCOptions...)...)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc) // v1 and v1alpha: grpcurl and older clients still use v1alpha

	if s.lis, s.socketPath, err = listen(o.GRPCAddr); err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", o.GRPCAddr, err)
	}
	if o.AdminAddr != "" && o.AdminAddr != config.AdminOff {
		if s.adminLis, err = net.Listen("tcp", o.AdminAddr); err != nil {
			s.closeListener()
			return nil, fmt.Errorf("server: admin listen on %s: %w", o.AdminAddr, err)
		}
		s.admin = s.newAdminServer()
	}
	return s, nil
}

// GRPC returns the gRPC server to register services on. Register before Run: grpc-go
// refuses registrations once serving.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Addr is the bound gRPC address: "127.0.0.1:41234" or "unix:///abs/path.sock".
func (s *Server) Addr() string {
	if s.socketPath != "" {
		return "unix://" + s.socketPath
	}
	return s.lis.Addr().String()
}

// AdminAddr is the bound admin HTTP address, or "" when the admin server is disabled.
func (s *Server) AdminAddr() string {
	if s.adminLis == nil {
		return ""
	}
	return s.adminLis.Addr().String()
}

// Metrics is the server's Prometheus registry, served on /metrics. Services register their
// own collectors here instead of the global registry, so two servers in one process (tests,
// make up) never collide.
func (s *Server) Metrics() *prometheus.Registry { return s.registry }

// AddReadiness registers a check that /readyz runs, e.g. a database ping. A check gets a
// context bounded by the probe and should return quickly; an error marks the service unready.
func (s *Server) AddReadiness(name string, check func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, namedFunc{name, check})
}

// OnClose registers fn to run at shutdown after gRPC and admin HTTP have stopped. Closers run
// in reverse registration order (register telemetry first, then the database, then NATS),
// each with the remaining shutdown deadline.
func (s *Server) OnClose(name string, fn func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closers = append(s.closers, namedFunc{name, fn})
}

// Close releases the listeners of a server whose Run was never called, e.g. when a later
// startup step failed. It does not run the closers. After Run it does nothing.
func (s *Server) Close() {
	if s.started.CompareAndSwap(false, true) {
		s.closeListener()
		if s.adminLis != nil {
			_ = s.adminLis.Close() // nothing was served; a close error has no consequence
		}
	}
}
