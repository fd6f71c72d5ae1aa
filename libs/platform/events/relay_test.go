package events_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestRelayPublishesCloudEventHeaders(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))

	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	state, _ := trace.ParseTraceState("vendor=opaque")
	traced := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, TraceState: state,
	}))
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	var id string
	if err := pg.InTx(ctx, f.pool, func(tx pgx.Tx) error {
		var err error
		id, err = events.Outbox{Now: func() time.Time { return at }}.Add(traced, tx, events.Event{
			Subject: f.subject + ".token.revoked", Type: "plinth.test.token.revoked.v1", Payload: wrapperspb.String("tok-1"),
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
		t.Fatalf("event id %q is not a UUIDv7 (%v)", id, err)
	}

	startRelay(t, f, events.RelayConfig{Source: "plinth/auth"})
	eventually(t, 10*time.Second, "the event in the stream", func() bool { return streamMsgs(t, ctx, f) == 1 })

	s, err := f.js.Stream(ctx, f.stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ce-specversion": "1.0",
		"ce-id":          id,
		"ce-source":      "plinth/auth",
		"ce-type":        "plinth.test.token.revoked.v1",
		"ce-time":        "2026-01-02T03:04:05.123456Z",
		"content-type":   "application/protobuf",
		"traceparent":    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":     "vendor=opaque",
		"Nats-Msg-Id":    id,
	}
	for k, v := range want {
		if got := msg.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if msg.Subject != f.subject+".token.revoked" {
		t.Errorf("subject %q", msg.Subject)
	}
	var payload wrapperspb.StringValue
	if err := proto.Unmarshal(msg.Data, &payload); err != nil || payload.GetValue() != "tok-1" {
		t.Errorf("payload = %v (%v), want tok-1", payload.GetValue(), err)
	}
	// The relay marks the row after the stream's ack, in its own commit: wait for it.
	eventually(t, 10*time.Second, "the row marked sent", func() bool {
		return count(t, ctx, f.pool, "SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL AND event_id = $1", id) == 1
	})
}

func TestRelayRepublishIsDeduplicated(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	f.change(t, ctx, "a")
	r := startRelay(t, f, events.RelayConfig{PollInterval: 50 * time.Millisecond})
	eventually(t, 10*time.Second, "first publish", func() bool { return r.Stats().Published == 1 })

	// As if the relay had crashed between the PubAck and its commit.
	if _, err := f.pool.Exec(ctx, "UPDATE outbox SET sent_at = NULL"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "republish", func() bool { return r.Stats().Published == 2 })
	if n := streamMsgs(t, ctx, f); n != 1 {
		t.Fatalf("stream holds %d messages after a republish, want 1 (Nats-Msg-Id dedupe)", n)
	}
}

func TestRelayWakesOnNotify(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	// Polling alone would take an hour: only LISTEN/NOTIFY can deliver in time.
	r := startRelay(t, f, events.RelayConfig{PollInterval: time.Hour})
	time.Sleep(200 * time.Millisecond) // let the relay go idle
	f.change(t, ctx, "a")
	eventually(t, 10*time.Second, "publish after NOTIFY", func() bool { return r.Stats().Published == 1 })
	f.change(t, ctx, "b")
	eventually(t, 10*time.Second, "second publish after NOTIFY", func() bool { return r.Stats().Published == 2 })
}

func TestRelayReplicasPublishEachEventOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 2*time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	const n = 300
	for i := range n {
		f.change(t, ctx, "thing"+strings.Repeat("x", i%3))
	}
	cfg := events.RelayConfig{BatchSize: 7, PollInterval: 50 * time.Millisecond}
	r1, r2, r3 := startRelay(t, f, cfg), startRelay(t, f, cfg), startRelay(t, f, cfg)
	total := func() uint64 { return r1.Stats().Published + r2.Stats().Published + r3.Stats().Published }
	eventually(t, 30*time.Second, "all events published", func() bool { return total() >= n })
	time.Sleep(200 * time.Millisecond)
	if got := total(); got != n {
		t.Fatalf("replicas published %d times for %d events: SKIP LOCKED should prevent double publishing", got, n)
	}
	if got := streamMsgs(t, ctx, f); got != n {
		t.Fatalf("stream has %d messages, want %d", got, n)
	}
	if r1.Stats().Published == n || r2.Stats().Published == n {
		t.Logf("one replica did all the work (%d/%d/%d); allowed, but unusual", r1.Stats().Published, r2.Stats().Published, r3.Stats().Published)
	}
	if p := count(t, ctx, f.pool, "SELECT count(*) FROM outbox WHERE sent_at IS NULL"); p != 0 {
		t.Fatalf("%d rows left unsent", p)
	}
}

func TestRelayPrunesSentRowsAndReportsMetrics(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	f.change(t, ctx, "old")
	if _, err := f.pool.Exec(ctx, "UPDATE outbox SET sent_at = now() - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	f.change(t, ctx, "new")
	r := startRelay(t, f, events.RelayConfig{Retention: time.Hour, PollInterval: 50 * time.Millisecond, Source: "plinth/metrics"})
	eventually(t, 10*time.Second, "publish and prune", func() bool {
		return r.Stats().Published == 1 && count(t, ctx, f.pool, "SELECT count(*) FROM outbox") == 1
	})

	reg := prometheus.NewRegistry()
	if err := reg.Register(r.Collector()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		m := mf.GetMetric()[0]
		if m.GetLabel()[0].GetValue() != "plinth/metrics" {
			t.Errorf("%s source label %q", mf.GetName(), m.GetLabel()[0].GetValue())
		}
		got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	want := map[string]float64{"plinth_outbox_pending": 0, "plinth_outbox_published_total": 1, "plinth_outbox_publish_failures_total": 0}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func TestOutboxAddIsTransactional(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, "unused", appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	errAbort := errors.New("abort")
	err = pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := (events.Outbox{}).Add(ctx, tx, events.Event{Subject: "plinth.t.x.y", Type: "t", Payload: wrapperspb.String("v")}); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	if n := count(t, ctx, pool, "SELECT count(*) FROM outbox"); n != 0 {
		t.Fatalf("rolled-back event left %d rows", n)
	}
	bad := []events.Event{
		{Subject: "", Type: "t", Payload: wrapperspb.String("v")},
		{Subject: "plinth.*.x", Type: "t", Payload: wrapperspb.String("v")},
		{Subject: "plinth..x", Type: "t", Payload: wrapperspb.String("v")},
		{Subject: "plinth.x", Type: "t"},
		{Subject: "plinth.x"},
	}
	for _, ev := range bad {
		err := pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := events.Outbox{}.Add(ctx, tx, ev)
			return err
		})
		if err == nil {
			t.Errorf("Add(%+v) accepted an invalid event", ev)
		}
	}
}

func TestRelayNeedsOutboxTable(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	db := testenv.DB(t)
	r, err := events.NewRelay(events.RelayConfig{Pool: db.Pool, JetStream: nopJS{}, Source: "plinth/x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err == nil || !strings.Contains(err.Error(), "events.Migrations()") {
		t.Fatalf("err = %v, want a hint to run events.Migrations()", err)
	}
	if _, err := events.NewRelay(events.RelayConfig{Pool: db.Pool, JetStream: nopJS{}}); err == nil {
		t.Fatal("NewRelay without Source succeeded")
	}
}

// nopJS satisfies jetstream.JetStream for tests that fail before publishing.
type nopJS struct{ jetstream.JetStream }

func TestOutboxTypeDefaultsToMessageName(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, db.Schema, appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	err = pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := events.Outbox{}.Add(ctx, tx, events.Event{Subject: "plinth.x.y.z", Payload: wrapperspb.String("v")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var typ string
	if err := pool.QueryRow(ctx, "SELECT type FROM outbox").Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "google.protobuf.StringValue" {
		t.Fatalf("ce-type %q, want the payload's full message name", typ)
	}
}
