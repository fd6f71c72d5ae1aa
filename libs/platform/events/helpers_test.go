package events_test

import (
	"context"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// appMigrations stand in for a service's own tables: things it changes, and what its
// event handler did (no unique key, so a double application would show).
var appMigrations = fstest.MapFS{
	"001_create_things.up.sql": {Data: []byte(`
		CREATE TABLE things (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
		CREATE TABLE handled (event_id text NOT NULL, subject text NOT NULL, trace_id text NOT NULL DEFAULT '');`)},
}

type fixture struct {
	pool    *pgxpool.Pool
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string
	subject string // prefix: events go to <subject>.<verb>
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// setup gives the test a migrated schema, a NATS connection to natsURL and a stream
// with unique names.
func setup(t *testing.T, ctx context.Context, natsURL string) fixture {
	t.Helper()
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, "unused", appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	nc, err := events.Connect(natsURL, events.Credentials{}, t.Name(), nil, nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{pool: pool, nc: nc, js: js, stream: testenv.UniqueName(t, "S"), subject: "plinth." + testenv.UniqueName(t, "svc")}
	if _, err := events.EnsureStream(ctx, js, f.stream, []string{f.subject + ".>"}, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), f.stream) })
	return f
}

// change makes one state change and records its event in the same transaction.
func (f fixture) change(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	var id string
	err := pg.InTx(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO things (name) VALUES ($1)", name); err != nil {
			return err
		}
		var err error
		id, err = events.Outbox{}.Add(ctx, tx, events.Event{
			Subject: f.subject + ".thing.created",
			Type:    "plinth.test.thing.created.v1",
			Payload: wrapperspb.String(name),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// runInBackground runs fn until the test ends and fails the test if fn errs.
func runInBackground(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := fn(ctx); err != nil {
			t.Errorf("background run: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func startRelay(t *testing.T, f fixture, cfg events.RelayConfig) *events.Relay {
	t.Helper()
	cfg.Pool, cfg.JetStream = f.pool, f.js
	if cfg.Source == "" {
		cfg.Source = "plinth/test"
	}
	r, err := events.NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, r.Run)
	return r
}

// recordingHandler stores each application in the handled table, with the trace id
// seen in its context.
func recordingHandler(ctx context.Context, tx pgx.Tx, d events.Delivery) error {
	traceID := ""
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		traceID = sc.TraceID().String()
	}
	_, err := tx.Exec(ctx, "INSERT INTO handled (event_id, subject, trace_id) VALUES ($1, $2, $3)", d.ID, d.Subject, traceID)
	return err
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func streamMsgs(t *testing.T, ctx context.Context, f fixture) uint64 {
	t.Helper()
	s, err := f.js.Stream(ctx, f.stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func count(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
