package service

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// recorder notes the order in which steps stop.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) note(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, name)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

func newBare(t *testing.T) *Service {
	t.Helper()
	s, err := New(Options{Name: "t", Logger: discardLogger(), Admin: config.Admin{AdminAddr: "off", ShutdownTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loop is a background loop that records when it stops.
func loop(r *recorder, name string, started chan<- string) func(context.Context) error {
	return func(ctx context.Context) error {
		started <- name
		<-ctx.Done()
		r.note(name)
		return ctx.Err()
	}
}

// TestStepsUnwindInReverseAcrossLoopsAndCleanups: a loop registered after the database stops
// before the database closes, whatever kind each step is.
func TestStepsUnwindInReverseAcrossLoopsAndCleanups(t *testing.T) {
	s, r, started := newBare(t), &recorder{}, make(chan string, 2)
	s.Defer("postgres", func(context.Context) error { r.note("postgres"); return nil })
	s.Go("relay", loop(r, "relay", started))
	s.Defer("nats", func(context.Context) error { r.note("nats"); return nil })
	s.Go("purge", loop(r, "purge", started))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-started
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if want := []string{"purge", "nats", "relay", "postgres"}; !slices.Equal(r.got(), want) {
		t.Errorf("stopped in order %v, want %v", r.got(), want)
	}
}

func TestFailingLoopEndsRunAndUnwinds(t *testing.T) {
	s, r := newBare(t), &recorder{}
	s.Defer("postgres", func(context.Context) error { r.note("postgres"); return nil })
	s.Go("listener", func(context.Context) error { return errors.New("listener broke") })
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "listener: listener broke") {
			t.Errorf("Run = %v, want the loop's error named", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end when a loop failed")
	}
	if !slices.Equal(r.got(), []string{"postgres"}) {
		t.Errorf("cleanups after a failed loop: %v", r.got())
	}
}

func TestLoopThatFinishesDoesNotStopTheService(t *testing.T) {
	s := newBare(t)
	finished := make(chan struct{})
	s.Go("once", func(context.Context) error { close(finished); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-finished
	select {
	case err := <-done:
		t.Fatalf("Run returned (%v) after a loop finished cleanly", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestCloseOnErrorUnwindsAFailedStart: Open's deferred CloseOnError releases what the steps
// before the failure acquired, and never starts the loops.
func TestCloseOnErrorUnwindsAFailedStart(t *testing.T) {
	r := &recorder{}
	open := func() (err error) {
		s := newBare(t)
		defer s.CloseOnError(&err)
		s.Defer("postgres", func(context.Context) error { r.note("postgres"); return nil })
		s.Go("relay", func(context.Context) error { r.note("relay ran"); return nil })
		s.Defer("nats", func(context.Context) error { return errors.New("drain failed") })
		return errors.New("bad config")
	}
	err := open()
	if err == nil || !strings.Contains(err.Error(), "bad config") || !strings.Contains(err.Error(), "close nats: drain failed") {
		t.Errorf("Open = %v, want the start error joined with the cleanup error", err)
	}
	if !slices.Equal(r.got(), []string{"postgres"}) {
		t.Errorf("after a failed start: %v, want only the postgres cleanup", r.got())
	}
}

func TestLifetimeEndsWhenShutdownBegins(t *testing.T) {
	s, r := newBare(t), &recorder{}
	s.Defer("postgres", func(context.Context) error {
		if s.Lifetime().Err() == nil {
			t.Error("Lifetime still open when cleanups run")
		}
		r.note("postgres")
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if s.Lifetime().Err() != nil {
		t.Fatal("Lifetime ended before shutdown")
	}
	cancel()
	<-done
	if len(r.got()) != 1 {
		t.Error("cleanup did not run")
	}
}

func TestLoopRegisteredWhileRunningStartsAtOnce(t *testing.T) {
	s, r, started := newBare(t), &recorder{}, make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	// Run may not have started yet; registering must work either way.
	s.Go("late", loop(r, "late", started))
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("late loop never started")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.got(), []string{"late"}) {
		t.Errorf("late loop not joined: %v", r.got())
	}
}
