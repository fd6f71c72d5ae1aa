package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Run serves until ctx is done or the process gets SIGINT/SIGTERM, then shuts down:
//
//  1. health reports NOT_SERVING for every service and /readyz fails;
//  2. the server keeps serving for DrainDelay so clients and load balancers move away;
//  3. GracefulStop waits for in-flight calls; at the deadline the rest are cut with Stop;
//  4. the admin HTTP server stops;
//  5. closers run in reverse registration order.
//
// ShutdownTimeout bounds steps 2-5 together. Run returns nil after a requested shutdown, or
// the serve error that ended it joined with any shutdown errors. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("server: Run called twice, or after Close")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	s.metrics.InitializeMetrics(s.grpc) // export zero counters for every method from the start
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)

	serveErr := make(chan error, 2)
	go func() {
		if err := s.grpc.Serve(s.lis); err != nil {
			serveErr <- fmt.Errorf("grpc serve: %w", err)
		}
	}()
	if s.admin != nil {
		go func() {
			if err := s.admin.Serve(s.adminLis); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("admin http serve: %w", err)
			}
		}()
	}
	s.log.Info("serving", "grpc_addr", s.Addr(), "admin_addr", s.AdminAddr())

	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutdown requested", "cause", context.Cause(ctx))
	case runErr = <-serveErr:
		s.log.Error("server failed; shutting down", "error", runErr)
	}
	return errors.Join(runErr, s.shutdown())
}

func (s *Server) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()

	s.draining.Store(true)
	s.health.Shutdown() // every service NOT_SERVING; later SetServingStatus calls are ignored
	if d := s.opts.DrainDelay; d > 0 {
		s.log.Info("draining", "delay", d)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	s.stopGRPC(ctx)

	var errs []error
	if s.admin != nil {
		if err := s.admin.Shutdown(ctx); err != nil {
			_ = s.admin.Close() // deadline passed: cut the remaining admin connections
			errs = append(errs, fmt.Errorf("admin http shutdown: %w", err))
		}
	}
	s.closeListener()

	s.mu.Lock()
	closers := slices.Clone(s.closers)
	s.mu.Unlock()
	for _, c := range slices.Backward(closers) {
		if err := c.fn(ctx); err != nil {
			s.log.Error("close failed", "resource", c.name, "error", err)
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
		}
	}
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// stopGRPC lets in-flight calls finish until ctx's deadline, then cancels the rest.
func (s *Server) stopGRPC(ctx context.Context) {
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
}
