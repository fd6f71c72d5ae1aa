package launcher

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the console's writer goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// script writes an executable shell script and starts it as a child.
func script(t *testing.T, con *Console, name, body string) *child {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := startChild(name, path, nil, t.TempDir(), con.Writer(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStopChildrenTermsThenKillsTheStubborn(t *testing.T) {
	var out syncBuffer
	con := NewConsole(&out, false, 8)
	polite := script(t, con, "polite", "trap 'echo bye; exit 0' TERM\necho up\nwhile :; do sleep 0.05; done\n")
	stubborn := script(t, con, "stubborn", "trap '' TERM\necho up\nwhile :; do sleep 0.05; done\n")
	time.Sleep(300 * time.Millisecond) // let both install their traps
	var said []string
	start := time.Now()
	stopChildren([]*child{polite, stubborn}, 700*time.Millisecond, make(chan struct{}), func(f string, a ...any) {
		said = append(said, f)
	})
	if !polite.exited() || !stubborn.exited() {
		t.Fatal("children still running after stopChildren")
	}
	if polite.err != nil {
		t.Errorf("polite child exit = %v, want a clean exit on SIGTERM", polite.err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "did not exit") {
		t.Errorf("said %q, want one kill notice for the stubborn child", said)
	}
	if d := time.Since(start); d < 700*time.Millisecond || d > 5*time.Second {
		t.Errorf("stop took %s, want about the 700ms deadline", d)
	}
	if !strings.Contains(out.String(), "polite   | bye") {
		t.Errorf("child output not prefixed or lost:\n%s", out.String())
	}
}

func TestStopChildrenForceSkipsTheDeadline(t *testing.T) {
	con := NewConsole(&syncBuffer{}, false, 8)
	stubborn := script(t, con, "stubborn", "trap '' TERM\nwhile :; do sleep 0.05; done\n")
	time.Sleep(200 * time.Millisecond)
	force := make(chan struct{})
	close(force)
	start := time.Now()
	stopChildren([]*child{stubborn}, time.Minute, force, func(string, ...any) {})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("forced stop took %s", d)
	}
}

func TestWaitReadyPollsUntilReady(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if r.URL.Path != "/readyz" || calls < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	con := NewConsole(&syncBuffer{}, false, 8)
	c := script(t, con, "svc", "sleep 30\n")
	defer stopChildren([]*child{c}, time.Second, make(chan struct{}), func(string, ...any) {})
	addr := strings.TrimPrefix(srv.URL, "http://")
	if err := c.waitReady(context.Background(), addr, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestWaitReadyReportsAnEarlyExit(t *testing.T) {
	con := NewConsole(&syncBuffer{}, false, 8)
	c := script(t, con, "crash", "echo boom >&2\nexit 3\n")
	err := c.waitReady(context.Background(), "127.0.0.1:1", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "crash exited before it was ready") {
		t.Fatalf("err = %v", err)
	}
}
