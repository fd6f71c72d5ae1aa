package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Admin is the runner's admin HTTP server: /healthz, /readyz and /metrics, as every Plinth
// binary has. The runner serves no gRPC, so it does not use the platform's gRPC server.
type Admin struct {
	srv      *http.Server
	lis      net.Listener
	status   func() Status
	draining atomic.Bool
}

// ListenAdmin binds addr (so a taken port fails before the runner starts) and prepares the
// handlers; Serve serves.
func ListenAdmin(addr string, gatherer prometheus.Gatherer, status func() Status) (*Admin, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listen on %s: %w", addr, err)
	}
	a := &Admin{lis: lis, status: status}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return a, nil
}

// Addr is the bound address.
func (a *Admin) Addr() string { return a.lis.Addr().String() }

// readyz answers 200 while the runner runs, whether or not it is registered: a runner waiting
// for its server or its token is healthy and must not be restarted for it (a restart would not
// bring the server back). The body says whether it is registered, and why not;
// plinth_vagrant_runner_registered is the metric to alert on. 503 once shutdown has begun.
func (a *Admin) readyz(w http.ResponseWriter, _ *http.Request) {
	if a.draining.Load() {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
		return
	}
	st := a.status()
	fmt.Fprintln(w, "ok")
	if st.Registered {
		fmt.Fprintf(w, "runner %s: registered with vagrant-server since %s\n", st.ID, st.Since.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "runner %s: not registered: %s\n", st.ID, st.Problem)
	}
	if st.JobID != "" {
		fmt.Fprintf(w, "running job %s\n", st.JobID)
	}
}

// Serve serves until Shutdown.
func (a *Admin) Serve() error {
	if err := a.srv.Serve(a.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Drain makes /readyz answer 503 from now on.
func (a *Admin) Drain() { a.draining.Store(true) }

// Shutdown stops the server.
func (a *Admin) Shutdown(ctx context.Context) error { return a.srv.Shutdown(ctx) }
