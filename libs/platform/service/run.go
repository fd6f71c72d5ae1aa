package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

// Run serves until ctx is done, the process gets SIGINT/SIGTERM, or a server or loop fails,
// then shuts down:
//
//  1. Lifetime ends; health reports NOT_SERVING; /readyz fails;
//  2. gRPC keeps serving for DrainDelay so clients and load balancers move away;
//  3. gRPC stops gracefully; at the deadline the remaining calls are cut;
//  4. the admin HTTP server stops;
//  5. loops and cleanups unwind in reverse registration order.
//
// ShutdownTimeout bounds steps 2-5 together. Run returns nil after a requested shutdown, or
// the failure that ended it joined with any shutdown errors. Run may be called once.
func (s *Service) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	s.mu.Lock()
	if s.bg != nil || s.closed {
		s.mu.Unlock()
		return errors.New("service: Run called twice, or after Close")
	}
	bg := context.WithoutCancel(ctx)
	s.bg = bg
	servers, steps := slices.Clone(s.servers), slices.Clone(s.steps)
	s.mu.Unlock()

	// The serve goroutines are not joined: grpc-go's Serve returns only once every handler
	// has, and shutdown must not wait past its deadline for a handler that ignores
	// cancellation.
	for _, srv := range servers {
		go func() { s.fail(srv.Serve()) }()
	}
	if s.admin != nil {
		go func() { s.fail(s.admin.Serve()) }()
	}
	for _, st := range steps {
		if st.loop != nil {
			s.start(bg, st)
		}
	}
	s.log.Info("serving", s.addrs(servers)...)

	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutdown requested", "cause", context.Cause(ctx))
	case runErr = <-s.failed:
		s.log.Error("failed; shutting down", "error", runErr)
	}
	return errors.Join(runErr, s.shutdown(servers))
}

// start runs a loop in its own goroutine; an error other than cancellation ends the service.
func (s *Service) start(bg context.Context, st *step) {
	ctx, cancel := context.WithCancel(bg)
	st.cancel, st.done = cancel, make(chan struct{})
	go func() {
		defer close(st.done)
		err := st.loop(ctx)
		if err != nil && ctx.Err() == nil {
			s.fail(fmt.Errorf("%s: %w", st.name, err))
		}
	}()
}

// fail reports the first failure to Run; later ones are only logged by their owners.
func (s *Service) fail(err error) {
	if err == nil {
		return
	}
	select {
	case s.failed <- err:
	default:
	}
}

func (s *Service) shutdown(servers []*server.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Admin.ShutdownTimeout)
	defer cancel()

	s.endLifetime()
	if s.admin != nil {
		s.admin.Drain()
	}
	for _, srv := range servers {
		srv.SetNotServing()
	}
	if d := s.opts.DrainDelay; d > 0 && len(servers) > 0 {
		s.log.Info("draining", "delay", d)
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() { srv.Stop(ctx) })
	}
	wg.Wait()

	var errs []error
	if s.admin != nil {
		if err := s.admin.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.unwind(ctx))
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// addrs are the log attributes naming where the service serves.
func (s *Service) addrs(servers []*server.Server) []any {
	var attrs []any
	for i, srv := range servers {
		key := "grpc_addr"
		if i > 0 {
			key = fmt.Sprintf("grpc_addr_%d", i+1)
		}
		attrs = append(attrs, key, srv.Addr())
	}
	return append(attrs, "admin_addr", s.AdminAddr())
}
