package service

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/server"
)

func TestGracefulShutdownFinishesInFlightCall(t *testing.T) {
	h := start(t, opts{ShutdownTimeout: 20 * time.Second})
	result := make(chan error, 1)
	go func() {
		out, err := h.call(context.Background(), "Slow", "")
		if err == nil && out != "slow done" {
			err = errors.New("unexpected reply " + out)
		}
		result <- err
	}()
	<-h.echo.slowEntered

	h.cancel()
	// The server must wait for Slow, so Run cannot have returned yet.
	select {
	case err := <-h.done:
		h.done <- err
		t.Fatalf("Run returned (%v) while a call was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(h.echo.slowRelease)
	if err := <-result; err != nil {
		t.Errorf("in-flight call during graceful shutdown: %v", err)
	}
	if err := h.stop(t); err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestShutdownDeadlineCutsHungCall(t *testing.T) {
	h := start(t, opts{ShutdownTimeout: 300 * time.Millisecond})
	result := make(chan error, 1)
	go func() {
		_, err := h.call(context.Background(), "Hang", "")
		result <- err
	}()
	<-h.echo.hangEntered

	if err := h.stop(t); err != nil {
		t.Errorf("Run = %v", err)
	}
	err := <-result
	if c := status.Code(err); c != codes.Unavailable && c != codes.Canceled {
		t.Errorf("hung call got %v, want Unavailable or Canceled after the forced stop", err)
	}
	if !contains(h.logs.String(), "shutdown deadline reached") {
		t.Error("forced stop was not logged")
	}
}

func TestClosersRunInReverseOrderWithDeadline(t *testing.T) {
	h := start(t, opts{})
	var mu sync.Mutex
	var order []string
	closer := func(name string, err error) func(context.Context) error {
		return func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("closer %s got a context without deadline", name)
			}
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
			return err
		}
	}
	h.svc.Defer("telemetry", closer("telemetry", nil))
	h.svc.Defer("postgres", closer("postgres", errors.New("pool busy")))
	h.svc.Defer("nats", closer("nats", nil))

	err := h.stop(t)
	if err == nil || err.Error() != "close postgres: pool busy" {
		t.Errorf("Run = %v, want the closer error", err)
	}
	if want := []string{"nats", "postgres", "telemetry"}; !slices.Equal(order, want) {
		t.Errorf("closers ran in order %v, want %v", order, want)
	}
}

func TestRunStopsOnSIGTERM(t *testing.T) {
	h := start(t, opts{})
	if _, err := h.call(testCtx(t), "Echo", "x"); err != nil { // Run is serving, so the signal is caught
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		h.done <- err
		if err != nil {
			t.Errorf("Run after SIGTERM = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop on SIGTERM")
	}
}

func TestRunTwiceFails(t *testing.T) {
	h := start(t, opts{})
	if _, err := h.call(testCtx(t), "Echo", "x"); err != nil { // the harness's Run is serving
		t.Fatal(err)
	}
	if err := h.svc.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestRunReturnsServeError(t *testing.T) {
	svc, err := New(Options{Name: "t", Logger: discardLogger(), Admin: config.Admin{AdminAddr: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	var closed bool
	svc.Defer("db", func(context.Context) error { closed = true; return nil })
	srv, err := svc.GRPC(config.GRPC{GRPCAddr: "127.0.0.1:0"}, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close() // make Serve fail the way a broken listener would

	done := make(chan error, 1)
	go func() { done <- svc.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "Serve called") {
			t.Errorf("Run = %v, want the serve error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after Serve failed")
	}
	if !closed {
		t.Error("cleanups did not run after a serve error")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
