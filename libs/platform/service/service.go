// Package service assembles a Plinth binary as a list of steps and runs it: each step that
// acquires something registers its cleanup (Defer), background loops are registered with Go
// and joined at shutdown, readiness checks are named (Ready), and gRPC servers and the admin
// HTTP server are served together. Cleanups and loops unwind in reverse registration order —
// on a failed start (CloseOnError) and after a graceful shutdown (Run) — so a loop started
// after the database opened always stops before the database closes.
//
//	func Open(ctx context.Context, cfg Config, log *slog.Logger) (_ *service.Service, err error) {
//		s, err := service.New(service.Options{Name: "auth", Logger: log, Admin: cfg.Admin})
//		if err != nil {
//			return nil, err
//		}
//		defer s.CloseOnError(&err)
//		pool, err := s.Postgres(ctx, cfg.DatabaseURL, store.Schema, store.Migrations)
//		...
//		return s, nil
//	}
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/plinth-dev/plinth/libs/platform/admin"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/server"
)

// DefaultShutdownTimeout is used when Options.Admin.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 15 * time.Second

// Options configures New. Only Name is required.
type Options struct {
	// Name identifies the binary in logs, e.g. "auth".
	Name string
	// Logger is the binary's logger; nil means slog.Default().
	Logger *slog.Logger
	// Admin is the admin HTTP address ("" or "off": none) and the shutdown deadline.
	Admin config.Admin
	// ClientLimits cap what one client address holds on every gRPC server GRPC builds
	// (unless its server.Options set them); zero: the server's defaults.
	ClientLimits config.ClientLimits
	// DrainDelay is how long gRPC keeps serving after reporting NOT_SERVING, so load
	// balancers and health watchers stop sending new calls before it stops accepting them.
	DrainDelay time.Duration
}

// Service is a binary being assembled (before Run) or running.
type Service struct {
	name     string
	log      *slog.Logger
	opts     Options
	registry *prometheus.Registry
	admin    *admin.Server // nil when disabled

	lifetime    context.Context
	endLifetime context.CancelFunc
	failed      chan error // a server or loop that failed ends Run

	mu      sync.Mutex
	steps   []*step
	servers []*server.Server
	bg      context.Context // set by Run: loops registered later start at once
	closed  bool
}

// step is a cleanup (Defer) or a background loop (Go), in registration order.
type step struct {
	name    string
	cleanup func(context.Context) error
	loop    func(context.Context) error
	cancel  context.CancelFunc // set when the loop started
	done    chan struct{}
}

// New builds the service's metrics registry (with Go and process collectors) and binds the
// admin HTTP server, so a taken port fails before anything else starts.
func New(o Options) (*Service, error) {
	if o.Name == "" {
		return nil, errors.New("service: Options.Name is required (it names the binary in logs)")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Admin.ShutdownTimeout == 0 {
		o.Admin.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Admin.ShutdownTimeout < 0 || o.DrainDelay < 0 {
		return nil, errors.New("service: ShutdownTimeout and DrainDelay must not be negative")
	}
	s := &Service{name: o.Name, log: o.Logger, opts: o, registry: prometheus.NewRegistry(), failed: make(chan error, 1)}
	s.lifetime, s.endLifetime = context.WithCancel(context.Background())
	if err := s.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("service: register metrics: %w", err)
	}
	if err := s.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("service: register metrics: %w", err)
	}
	if addr := o.Admin.AdminAddr; addr != "" && addr != config.AdminOff {
		a, err := admin.Listen(addr, s.registry, o.Logger)
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
		s.admin = a
	}
	return s, nil
}

// Logger is the service's logger.
func (s *Service) Logger() *slog.Logger { return s.log }

// Metrics is the registry served on /metrics; register the service's collectors here, never
// on the global registry, so two services in one process (tests, make up) never collide.
func (s *Service) Metrics() *prometheus.Registry { return s.registry }

// Admin is the admin HTTP server, for extra handlers; nil when disabled.
func (s *Service) Admin() *admin.Server { return s.admin }

// AdminAddr is the bound admin address, or "" when the admin server is disabled.
func (s *Service) AdminAddr() string {
	if s.admin == nil {
		return ""
	}
	return s.admin.Addr()
}

// GRPCAddr is the bound address of the first gRPC server, or "" when there is none.
func (s *Service) GRPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.servers) == 0 {
		return ""
	}
	return s.servers[0].Addr()
}

// Lifetime ends when shutdown begins, before gRPC stops: long-lived streams watch it and
// end, so the graceful stop need not wait for them until its deadline.
func (s *Service) Lifetime() context.Context { return s.lifetime }

// Defer registers fn to run at shutdown, or when the start fails, after everything
// registered later has stopped; fn gets the remaining shutdown deadline.
func (s *Service) Defer(name string, fn func(context.Context) error) {
	s.push(&step{name: name, cleanup: fn})
}

// Go registers a background loop. It starts when Run starts (at once if Run already
// started) with a context that ends at shutdown, at the loop's place in the reverse order;
// shutdown waits for it to return. A loop that returns an error other than its context's
// ends the service with that error: loops handle transient failures themselves.
func (s *Service) Go(name string, fn func(context.Context) error) {
	st := &step{name: name, loop: fn}
	// One critical section with Run's snapshot of the steps, so the loop starts exactly once.
	s.mu.Lock()
	s.steps = append(s.steps, st)
	bg := s.bg
	s.mu.Unlock()
	if bg != nil {
		s.start(bg, st)
	}
}

// Ready registers a readiness check that /readyz runs (for example a database ping); a
// failing check makes the service unready, so orchestrators stop routing to it.
func (s *Service) Ready(name string, check func(context.Context) error) {
	if s.admin != nil {
		s.admin.AddReadiness(name, check)
	}
}

// GRPC builds a gRPC server listening as g says, with the service's logger and metrics
// registry (unless o sets them), and serves it in Run. Register its services before Run.
func (s *Service) GRPC(g config.GRPC, o server.Options) (*server.Server, error) {
	o.GRPCAddr, o.LogCalls = g.GRPCAddr, g.LogCalls
	if o.Name == "" {
		o.Name = s.name
	}
	if o.Logger == nil {
		o.Logger = s.log
	}
	if o.Metrics == nil {
		o.Metrics = s.registry
	}
	if o.MaxConnsPerClient == 0 {
		o.MaxConnsPerClient = s.opts.ClientLimits.MaxConnsPerClient
	}
	if o.MaxCallsPerClient == 0 {
		o.MaxCallsPerClient = s.opts.ClientLimits.MaxCallsPerClient
	}
	srv, err := server.New(o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	return srv, nil
}

func (s *Service) push(st *step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, st)
}

// CloseOnError releases everything registered so far when *err is not nil; defer it right
// after New in a service's Open.
func (s *Service) CloseOnError(err *error) {
	if *err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Admin.ShutdownTimeout)
	defer cancel()
	if cerr := s.Close(ctx); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
}

// Close releases a service that will not Run: the listeners, then every step in reverse.
func (s *Service) Close(ctx context.Context) error {
	s.endLifetime()
	s.mu.Lock()
	servers := slices.Clone(s.servers)
	s.mu.Unlock()
	for _, srv := range servers {
		srv.Close()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	return s.unwind(ctx)
}

// unwind stops loops and runs cleanups in reverse registration order, once.
func (s *Service) unwind(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	steps := slices.Clone(s.steps)
	s.mu.Unlock()
	var errs []error
	for _, st := range slices.Backward(steps) {
		if err := st.stop(ctx, s.log); err != nil {
			s.log.Error("close failed", "resource", st.name, "error", err)
			errs = append(errs, fmt.Errorf("close %s: %w", st.name, err))
		}
	}
	return errors.Join(errs...)
}

// stop cancels and joins a started loop, or runs a cleanup.
func (st *step) stop(ctx context.Context, log *slog.Logger) error {
	if st.cleanup != nil {
		return st.cleanup(ctx)
	}
	if st.cancel == nil {
		return nil // never started
	}
	st.cancel()
	select {
	case <-st.done:
		return nil
	case <-ctx.Done():
		log.Warn("background loop did not stop before the shutdown deadline", "loop", st.name)
		return fmt.Errorf("loop did not stop: %w", ctx.Err())
	}
}
