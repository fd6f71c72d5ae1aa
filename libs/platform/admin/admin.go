// Package admin is the admin HTTP server every Plinth binary runs beside its work:
// /metrics (Prometheus), /healthz (liveness) and /readyz (named readiness checks). It needs no
// gRPC server, so a runner or a gateway has the same admin surface as a service.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readinessTimeout bounds each readiness check, so one hung dependency cannot hold the probe
// past the orchestrator's own timeout.
const readinessTimeout = 5 * time.Second

// Server is a bound admin HTTP server. Register checks and handlers before Serve.
type Server struct {
	log      *slog.Logger
	srv      *http.Server
	lis      net.Listener
	mux      *http.ServeMux
	draining atomic.Bool

	mu      sync.Mutex
	checks  []check
	details []func(context.Context) string
}

type check struct {
	name string
	fn   func(context.Context) error
}

// Listen binds addr ("host:port"; port 0 picks one), so that a taken port fails before
// anything else starts, and serves registry on /metrics.
func Listen(addr string, registry *prometheus.Registry, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listen on %s: %w", addr, err)
	}
	s := &Server{log: log, lis: lis, mux: http.NewServeMux()}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{
		Registry:          registry, // also expose promhttp's own error counters
		EnableOpenMetrics: true,     // needed for the trace-id exemplars
	}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Liveness: the process answers HTTP. Dependencies belong to /readyz; restarting a
		// process because its database is down would not fix the database.
		fmt.Fprintln(w, "ok")
	})
	s.mux.HandleFunc("GET /readyz", s.serveReadyz)
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second}
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// AddReadiness registers a check that /readyz runs, e.g. a database ping. A check gets a
// context bounded by the probe and should return quickly; an error marks the process unready.
func (s *Server) AddReadiness(name string, fn func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, check{name, fn})
}

// AddDetail adds lines that a passing /readyz prints after "ok": whether a runner is
// registered with its server, or a warning about something that degrades the service without
// making it unready (events waiting for NATS, parked events). fn must be quick and must not
// reveal secrets: the page needs no authentication.
func (s *Server) AddDetail(fn func(context.Context) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.details = append(s.details, fn)
}

// Serve serves until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin http serve: %w", err)
	}
	return nil
}

// Drain makes /readyz answer 503 from now on, so load balancers move away during shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// Shutdown stops serving, letting requests in flight finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close() // deadline passed: cut the remaining connections
		return fmt.Errorf("admin http shutdown: %w", err)
	}
	return nil
}

// Close releases the listener of a server that never served.
func (s *Server) Close() { _ = s.lis.Close() }

// serveReadyz answers 200 "ok" when every readiness check passes, and 503 with the names of
// the failing checks otherwise (the causes go to the log, not to an unauthenticated page).
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
		return
	}
	if failing := s.FailingChecks(r.Context()); len(failing) > 0 {
		http.Error(w, "not ready: "+strings.Join(failing, ", "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
	s.mu.Lock()
	details := append([]func(context.Context) string(nil), s.details...)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
	defer cancel()
	for _, d := range details {
		if text := strings.TrimRight(d(ctx), "\n"); text != "" {
			fmt.Fprintln(w, text)
		}
	}
}

// FailingChecks runs all checks concurrently and returns the names of those that failed, in
// registration order, logging each cause.
func (s *Server) FailingChecks(ctx context.Context) []string {
	s.mu.Lock()
	checks := append([]check(nil), s.checks...)
	s.mu.Unlock()

	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, readinessTimeout)
			defer cancel()
			errs[i] = c.fn(ctx)
		})
	}
	wg.Wait()

	var failing []string
	for i, err := range errs {
		if err != nil {
			failing = append(failing, checks[i].name)
			s.log.WarnContext(ctx, "readiness check failed", "check", checks[i].name, "error", err)
		}
	}
	return failing
}
