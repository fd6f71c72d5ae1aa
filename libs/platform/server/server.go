// Package server builds a Plinth service's gRPC server the same way in every binary: one
// interceptor chain (recovery, calls per client address, logging with trace ids, metrics,
// auth), OpenTelemetry tracing, grpc.health.v1, server reflection, bounded request headers,
// streams per connection, connections per client address on TCP ports and handshake time, a
// request that cannot be decoded refused with InvalidArgument (never Internal), and TCP or
// unix-socket listeners. The service package runs it (Serve, then Stop at shutdown) beside
// the admin HTTP server and the service's background work.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/netlimit"
)

// DefaultMaxHeaderListSize bounds the metadata of one call. grpc-go accepts 16 MiB by
// default; a token, a trace context and a user agent need a few hundred bytes, and every
// header is parsed (and tokens decoded) before any handler can refuse it.
const DefaultMaxHeaderListSize = 16 << 10

// DefaultMaxConcurrentStreams is the most calls one connection carries at once: grpc-go
// refuses a stream over it before any handler runs, and its clients queue calls instead of
// opening one. Without it one connection held 10,000 streams of auth (issue #36). The
// gateway, which relays many clients' calls to a backend, opens another connection to it as
// each carries this many (services/gateway/internal/app's connPool).
const DefaultMaxConcurrentStreams = 256

// DefaultHandshakeTimeout bounds a new connection's handshake (TLS when the server has it,
// then HTTP/2's preface and settings): grpc-go alone waits 120 s, and held a connection that
// sent only the preface that long (issue #36). 10 s, as the gateway gives a connection for
// its first request's headers.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultMaxConnsPerClient is the most connections one client address (an IPv6 client's
// /64) holds on a service's TCP port (PLINTH_MAX_CONNS_PER_CLIENT); more are closed at
// accept. The gateway, every service's heaviest client, holds at most 8 (its pool per
// backend, services/gateway/internal/app/pool.go); the gateway's own cap for its clients is
// the same 64.
const DefaultMaxConnsPerClient = config.DefaultMaxConnsPerClient

// DefaultMaxCallsPerClient is the most calls (streams included) one client address has in
// progress across its connections to a service (PLINTH_MAX_CALLS_PER_CLIENT); more are
// refused with ResourceExhausted. Behind the gateway every call arrives from its one
// address over its pool of 8 connections, each carrying DefaultMaxConcurrentStreams: the
// cap is that, 8 × 256, so it never refuses what the gateway may relay. Without it, 40
// connections × 256 health Watch streams held 10,000 streams of auth (issue #36).
const DefaultMaxCallsPerClient = config.DefaultMaxCallsPerClient

// DefaultSlowCall is the duration from which a successful call is logged at INFO.
const DefaultSlowCall = time.Second

// Options configures New. Only Name and GRPCAddr are required.
type Options struct {
	// Name identifies the service in logs, e.g. "auth".
	Name string
	// GRPCAddr is "host:port" (port 0 picks a free port) or "unix:///abs/path.sock".
	GRPCAddr string
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Metrics receives the gRPC server metrics; nil means a registry of the server's own
	// (service.Service passes the one its admin server exposes).
	Metrics prometheus.Registerer
	// Authenticate, when set, runs for every call except grpc.health.v1, reflection and
	// AuthExempt methods.
	Authenticate AuthFunc
	// AuthExempt lists full method names ("/pkg.Service/Method") that skip Authenticate,
	// such as a Login call.
	AuthExempt []string
	// MaxHeaderListSize bounds a call's metadata in bytes; zero means DefaultMaxHeaderListSize.
	MaxHeaderListSize uint32
	// MaxConcurrentStreams bounds the calls one connection carries at once; zero means
	// DefaultMaxConcurrentStreams.
	MaxConcurrentStreams uint32
	// MaxConnsPerClient bounds the connections one client address holds on the server's TCP
	// ports; zero means DefaultMaxConnsPerClient.
	MaxConnsPerClient int
	// MaxCallsPerClient bounds the calls one client address has in progress across its
	// connections; zero means DefaultMaxCallsPerClient.
	MaxCallsPerClient int
	// HandshakeTimeout bounds a new connection's handshake; zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// LogCalls is "all" to log every finished call at INFO; "" (the default) logs successful
	// calls at DEBUG unless they took SlowCall or longer, and failed calls at INFO (client
	// errors) or WARN/ERROR (server errors). At thousands of calls a second a line per call
	// is megabytes of log per second.
	LogCalls string
	// SlowCall is the duration from which a successful call is logged at INFO; zero means
	// DefaultSlowCall.
	SlowCall time.Duration
	// TracerProvider creates the server spans; nil means the OpenTelemetry global.
	TracerProvider trace.TracerProvider
	// CheckRequest, when set, checks every request message a client sends (each message of
	// a stream too) after the bounds and before the auth hook and the handler; its error is
	// the client's answer, so it should be an *input.Error (InvalidArgument naming the field)
	// or a status error.
	CheckRequest func(proto.Message) error
	// GRPCOptions are appended to the server's options, e.g. grpc.Creds for mutual TLS;
	// interceptors given there run inside the chain.
	GRPCOptions []grpc.ServerOption
}

// Server is a bound gRPC server. Register services on GRPC() before Serve.
type Server struct {
	opts    Options
	log     *slog.Logger
	grpc    *grpc.Server
	health  *health.Server
	metrics *grpcprom.ServerMetrics
	codec   *requestCodec
	conns   *netlimit.Conns
	calls   *netlimit.Calls

	lis        net.Listener
	socketPath string // set when listening on a unix socket, removed on shutdown
	started    atomic.Bool
}

// New builds the server and binds its listener, so that Addr is known (also with port 0)
// and an address in use fails before anything else starts. Call Serve, or Close if Serve
// will not be called, to release the listener.
func New(o Options) (*Server, error) {
	if o.Name == "" {
		return nil, errors.New("server: Options.Name is required (it names the service in logs)")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = prometheus.NewRegistry()
	}
	if o.MaxHeaderListSize == 0 {
		o.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if o.MaxConnsPerClient == 0 {
		o.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if o.MaxCallsPerClient == 0 {
		o.MaxCallsPerClient = DefaultMaxCallsPerClient
	}
	if o.MaxConnsPerClient < 0 || o.MaxCallsPerClient < 0 {
		return nil, errors.New("server: MaxConnsPerClient and MaxCallsPerClient must not be negative")
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.SlowCall <= 0 {
		o.SlowCall = DefaultSlowCall
	}
	if o.LogCalls != "" && o.LogCalls != LogAllCalls {
		return nil, fmt.Errorf("server: LogCalls %q is neither empty nor %q", o.LogCalls, LogAllCalls)
	}
	exempt, err := exemptSet(o.AuthExempt)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, log: o.Logger.With("service", o.Name), health: health.NewServer(), codec: newRequestCodec(nil, o.CheckRequest)}
	s.metrics = grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	if err := o.Metrics.Register(s.metrics); err != nil {
		return nil, fmt.Errorf("server: register gRPC metrics: %w", err)
	}
	s.peerLimits()
	if err := netlimit.Register(o.Metrics, "plinth_grpc", "the gRPC port", s.conns, s.calls); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.grpc = grpc.NewServer(append(s.serverOptions(exempt), o.GRPCOptions...)...)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc) // v1 and v1alpha: grpcurl and older clients still use v1alpha

	if s.lis, s.socketPath, err = listen(o.GRPCAddr); err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", o.GRPCAddr, err)
	}
	s.lis = s.admitted(s.lis)
	return s, nil
}

// LogAllCalls is the Options.LogCalls value that logs every call at INFO.
const LogAllCalls = "all"

// GRPC returns the gRPC server to register services on. Register before Serve: grpc-go
// refuses registrations once serving.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Addr is the bound gRPC address: "127.0.0.1:41234" or "unix:///abs/path.sock".
func (s *Server) Addr() string {
	if s.socketPath != "" {
		return "unix://" + s.socketPath
	}
	return s.lis.Addr().String()
}

// Serve marks every registered service SERVING and serves until Stop. It returns nil after
// Stop, otherwise the error that ended serving. Serve may be called once.
func (s *Server) Serve() error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("server: Serve called twice, or after Close")
	}
	s.metrics.InitializeMetrics(s.grpc) // export zero counters for every method from the start
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := s.grpc.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("grpc serve: %w", err)
	}
	return nil
}

// ServeOn serves the server's services on lis too (a second port: a mutual-TLS one beside
// a unix socket), until Stop; a TCP port's connections count against the same per-address
// caps as the first port's. It returns nil after Stop.
func (s *Server) ServeOn(lis net.Listener) error {
	if err := s.grpc.Serve(s.admitted(lis)); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("grpc serve on %s: %w", lis.Addr(), err)
	}
	return nil
}

// SetNotServing reports NOT_SERVING for every service, so health watchers move away before
// the server stops accepting calls. Later status changes are ignored.
func (s *Server) SetNotServing() { s.health.Shutdown() }

// Stop lets in-flight calls finish until ctx ends, then cancels the rest, and removes the
// unix socket. It reports NOT_SERVING first.
func (s *Server) Stop(ctx context.Context) {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("shutdown deadline reached; cancelling in-flight calls")
		// Stop closes every connection, which cancels the remaining calls. It runs in the
		// background because grpc-go's Stop, once GracefulStop is pending, can block until
		// handlers that ignore cancellation return; shutdown must not wait for those.
		go s.grpc.Stop()
	}
	s.closeListener()
}

// Close releases the listener of a server whose Serve was never called, e.g. when a later
// startup step failed. After Serve it does nothing.
func (s *Server) Close() {
	if s.started.CompareAndSwap(false, true) {
		s.closeListener()
	}
}
