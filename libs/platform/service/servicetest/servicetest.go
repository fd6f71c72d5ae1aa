// Package servicetest runs an assembled service.Service inside a test.
package servicetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plinth-dev/plinth/libs/platform/service"
)

// Running is a service a test runs.
type Running struct {
	// Service is the running service (its GRPCAddr, AdminAddr).
	Service *service.Service
	// Conn is a client connection to its first gRPC server; nil when it has none.
	Conn *grpc.ClientConn

	t    testing.TB
	once sync.Once
	stop context.CancelFunc
	done chan error
}

// Run runs s until the test ends or Stop, and dials its first gRPC server. A Run that
// returns an error, or a service that does not stop within 30 s, fails the test.
func Run(t testing.TB, s *service.Service) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{Service: s, t: t, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(r.Stop)
	if addr := s.GRPCAddr(); addr != "" {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		r.Conn = conn
	}
	return r
}

// Stop shuts the service down gracefully and waits for it; later calls do nothing.
func (r *Running) Stop() {
	r.once.Do(func() {
		r.stop()
		select {
		case err := <-r.done:
			if err != nil {
				r.t.Errorf("the service stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			r.t.Error("the service did not stop within 30s")
		}
	})
}
