package events_test

import (
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestNATSOutageDelaysEventsNeverLosesOrDuplicatesThem is the outbox's reason to exist:
// state changes made while NATS is down reach a durable consumer exactly once after
// NATS comes back.
func TestNATSOutageDelaysEventsNeverLosesOrDuplicatesThem(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 3*time.Minute)
	storeDir := t.TempDir()
	srv := testenv.NATSServer(t, 0, storeDir)
	port := srv.Port()
	f := setup(t, ctx, srv.ClientURL())

	relay := startRelay(t, f, events.RelayConfig{
		PollInterval: 200 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
		PublishTimeout: time.Second,
	})
	runInBackground(t, events.Consumer{
		JetStream: f.js, Pool: f.pool, Stream: f.stream, Durable: "outage",
		FilterSubjects: []string{f.subject + ".>"}, Handler: recordingHandler, AckWait: 5 * time.Second,
	}.Run)

	// The path works before the outage.
	want := []string{f.change(t, ctx, "before")}
	eventually(t, 15*time.Second, "first event handled", func() bool {
		return count(t, ctx, f.pool, "SELECT count(*) FROM handled") == 1
	})

	srv.Shutdown()
	const n = 40
	traceIDs := map[string]string{}
	for i := range n {
		tid := trace.TraceID{byte(i + 1), 0xab}
		sctx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
		}))
		var id string
		if err := pg.InTx(sctx, f.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(sctx, "INSERT INTO things (name) VALUES ('during outage')"); err != nil {
				return err
			}
			var err error
			id, err = events.Outbox{}.Add(sctx, tx, events.Event{
				Subject: f.subject + ".thing.created", Type: "plinth.test.thing.created.v1", Payload: wrapperspb.String("x"),
			})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
		traceIDs[id] = tid.String()
	}
	eventually(t, 15*time.Second, "relay to notice the outage", func() bool {
		s := relay.Stats()
		return s.Failures > 0 && s.Pending == n
	})
	if got := relay.Stats().Published; got != 1 {
		t.Fatalf("published %d events while NATS was down", got)
	}

	srv2, err := natsembed.Start(natsembed.Options{Port: port, StoreDir: storeDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Shutdown)

	eventually(t, 60*time.Second, "every event handled", func() bool {
		return count(t, ctx, f.pool, "SELECT count(*) FROM handled") >= n+1
	})
	time.Sleep(500 * time.Millisecond) // room for any duplicate to show up
	rows, err := f.pool.Query(ctx, "SELECT event_id, trace_id FROM handled")
	if err != nil {
		t.Fatal(err)
	}
	type handled struct{ id, traceID string }
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (handled, error) {
		var h handled
		return h, r.Scan(&h.id, &h.traceID)
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(got))
	for _, h := range got {
		ids = append(ids, h.id)
		if want, ok := traceIDs[h.id]; ok && h.traceID != want {
			t.Errorf("event %s handled with trace %s, want %s", h.id, h.traceID, want)
		}
	}
	sort.Strings(ids)
	sort.Strings(want)
	if len(ids) != len(want) {
		t.Fatalf("handled %d events, want exactly %d", len(ids), len(want))
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("handled ids differ from those written:\n got %v\nwant %v", ids, want)
		}
	}
	if m := streamMsgs(t, ctx, f); m != n+1 {
		t.Fatalf("stream holds %d messages, want %d (no duplicates)", m, n+1)
	}
	if s := relay.Stats(); s.Pending != 0 || s.Published != n+1 {
		t.Fatalf("relay stats %+v, want pending 0 and published %d", s, n+1)
	}
}
