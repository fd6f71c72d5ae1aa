package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readinessTimeout bounds each readiness check, so one hung dependency cannot hold the probe
// past the orchestrator's own timeout.
const readinessTimeout = 5 * time.Second

func (s *Server) newAdminServer() *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		Registry:          s.registry, // also expose promhttp's own error counters
		EnableOpenMetrics: true,       // needed for the trace-id exemplars
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// Liveness: the process answers HTTP. Dependencies belong to /readyz; restarting a
		// process because its database is down would not fix the database.
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
	}
}

// serveReadyz answers 200 "ok" when every readiness check passes, and 503 with the names of
// the failing checks otherwise (the causes go to the log, not to an unauthenticated page).
func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
		return
	}
	if failing := s.failingChecks(r.Context()); len(failing) > 0 {
		http.Error(w, "not ready: "+strings.Join(failing, ", "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// failingChecks runs all checks concurrently and returns the names of those that failed, in
// registration order.
func (s *Server) failingChecks(ctx context.Context) []string {
	s.mu.Lock()
	checks := append([]namedFunc(nil), s.checks...)
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
