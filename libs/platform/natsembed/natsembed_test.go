package natsembed_test

import (
	"bytes"
	"context"
	"errors"
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

func TestUsersAndPermissions(t *testing.T) {
	t.Parallel()
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Users: []natsembed.User{
		{Name: "writer", Password: "w-secret", Publish: []string{"a.>"}, Subscribe: []string{"_INBOX.>"}},
		{Name: "reader", Password: "r-secret", Publish: []string{"_INBOX.>"}, Subscribe: []string{"a.>", "b.>"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	for name, opts := range map[string][]nats.Option{
		"no credentials": nil,
		"wrong password": {nats.UserInfo("writer", "r-secret")},
	} {
		if nc, err := nats.Connect(s.ClientURL(), opts...); err == nil {
			nc.Close()
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: %v, want an authorization violation", name, err)
		}
	}

	refused := make(chan error, 10)
	writer, err := nats.Connect(s.ClientURL(), nats.UserInfo("writer", "w-secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := nats.Connect(s.ClientURL(), nats.UserInfo("reader", "r-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	allowed, err := reader.SubscribeSync("a.>")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := reader.SubscribeSync("b.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.SubscribeSync("a.>"); err != nil {
		t.Fatal(err)
	}
	_ = writer.Publish("b.forged", []byte("no"))
	_ = writer.Publish("a.ok", []byte("yes"))
	if err := writer.Flush(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 2 {
		select {
		case err := <-refused:
			got = append(got, err.Error())
		case <-time.After(5 * time.Second):
			t.Fatalf("refusals so far: %q", got)
		}
	}
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, `Permissions Violation for Publish to "b.forged"`) ||
		!strings.Contains(joined, `Permissions Violation for Subscription to "a.>"`) {
		t.Errorf("refusals %q, want the publish to b.forged and the writer's subscription", got)
	}
	// What the writer may publish reaches the reader; what it may not never left it.
	if m, err := allowed.NextMsg(5 * time.Second); err != nil || string(m.Data) != "yes" {
		t.Errorf("reader on a.>: %v %v, want the writer's a.ok", m, err)
	}
	if m, err := forged.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("reader on b.> received %s: a refused publish was delivered", m.Subject)
	}
}
