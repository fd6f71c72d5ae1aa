package natsembed_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/natsembed"
)

func TestRestartKeepsStreams(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()

	s, err := natsembed.Start(natsembed.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	if port <= 0 || !strings.HasSuffix(s.ClientURL(), ":"+strconv.Itoa(port)) {
		t.Fatalf("port %d, client URL %s", port, s.ClientURL())
	}
	publish(ctx, t, s.ClientURL(), true)
	s.Shutdown()
	s.Shutdown() // idempotent

	s2, err := natsembed.Start(natsembed.Options{Port: port, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown()
	if s2.Port() != port {
		t.Fatalf("restarted on %d, want %d", s2.Port(), port)
	}
	nc, err := nats.Connect(s2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KEEP")
	if err != nil {
		t.Fatalf("stream lost across restart: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("stream has %d messages after restart, want 1", info.State.Msgs)
	}
}

func TestLoggerAdapter(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	out := buf.String()
	if !strings.Contains(out, "component=nats-server") || !strings.Contains(out, "Server is ready") {
		t.Fatalf("server log not forwarded to slog:\n%s", out)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if _, err := natsembed.Start(natsembed.Options{}); err == nil || !strings.Contains(err.Error(), "StoreDir") {
		t.Fatalf("err = %v, want StoreDir required", err)
	}
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if _, err := natsembed.Start(natsembed.Options{Port: s.Port(), StoreDir: t.TempDir()}); err == nil {
		t.Fatal("second server on a taken port started")
	}
}

func publish(ctx context.Context, t *testing.T, url string, create bool) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if create {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep.>"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, "keep.one", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
