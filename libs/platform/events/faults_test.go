package events_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// insertRaw writes an outbox row directly, as an older build or a hand-made fix could, with
// none of Outbox.Add's checks and bounds.
func insertRaw(t *testing.T, ctx context.Context, f fixture, subject string, payload []byte) string {
	t.Helper()
	var id string
	err := f.pool.QueryRow(ctx, `INSERT INTO outbox (event_id, subject, type, payload, created_at)
		VALUES (gen_random_uuid(), $1, 'plinth.test.raw', $2, now()) RETURNING event_id::text`, subject, payload).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRelayParksUndeliverableEventsAndKeepsGoing: an event NATS refuses (over max_payload)
// and a malformed one (invalid subject) are parked with their reasons, counted, and the
// events around them — and after them — are published. Before, the relay retried the
// oversized event forever and no later event was ever published.
func TestRelayParksUndeliverableEventsAndKeepsGoing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	first := f.change(t, ctx, "before")
	huge := insertRaw(t, ctx, f, f.subject+".job.state_changed", make([]byte, 2<<20))
	bad := insertRaw(t, ctx, f, f.subject+".bad subject", []byte("x"))
	last := f.change(t, ctx, "after")

	relay := startRelay(t, f, events.RelayConfig{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "both good events in the stream", func() bool { return streamMsgs(t, ctx, f) == 2 })
	eventually(t, 20*time.Second, "both bad events parked", func() bool {
		return count(t, ctx, f.pool, "SELECT count(*) FROM outbox_dead_letters") == 2
	})
	for id, want := range map[string]string{huge: "maximum payload", bad: "not a valid NATS publish subject"} {
		var reason string
		if err := f.pool.QueryRow(ctx, "SELECT reason FROM outbox_dead_letters WHERE event_id = $1", id).Scan(&reason); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(reason, want) {
			t.Errorf("parked %s with reason %q, want it to say %q", id, reason, want)
		}
	}
	if n := count(t, ctx, f.pool, "SELECT count(*) FROM outbox WHERE sent_at IS NULL"); n != 0 {
		t.Errorf("%d rows still unsent", n)
	}
	if st := relay.Stats(); st.Parked != 2 {
		t.Errorf("Stats().Parked = %d", st.Parked)
	}
	if n, err := relay.DeadLetters(ctx); err != nil || n != 2 {
		t.Errorf("DeadLetters = %d, %v", n, err)
	}
	later := f.change(t, ctx, "later")
	eventually(t, 20*time.Second, "a later event published", func() bool { return streamMsgs(t, ctx, f) == 3 })
	_, _, _ = first, last, later
}

// TestOutboxBoundsEventsWhenWritten: a 1 MB error message in an event is cut when the event
// is written, so it is published, not parked.
func TestOutboxBoundsEventsWhenWritten(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	if err := pg.InTx(ctx, f.pool, func(tx pgx.Tx) error {
		_, err := events.Outbox{}.Add(ctx, tx, events.Event{Subject: f.subject + ".job.failed", Type: "plinth.test.job",
			Payload: wrapperspb.String(strings.Repeat("command ", 1<<17))})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	startRelay(t, f, events.RelayConfig{})
	eventually(t, 20*time.Second, "the bounded event in the stream", func() bool { return streamMsgs(t, ctx, f) == 1 })
	s, _ := f.js.Stream(ctx, f.stream)
	msg, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Data) > events.MaxFieldLen+64 || !strings.Contains(string(msg.Data), "[truncated 1048576 bytes]") {
		t.Errorf("published payload is %d bytes; want it cut with a marker", len(msg.Data))
	}
}

// TestPublisherStartsWithoutNATSAndDrainsOnConnect: a service opens its publisher while NATS
// is down (before, OpenPublisher failed at once with "no servers available"), and events
// written meanwhile are published when NATS comes up — woken by the connection, not by the
// backoff, which here is an hour.
func TestPublisherStartsWithoutNATSAndDrainsOnConnect(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	storeDir := t.TempDir()
	srv := testenv.NATSServer(t, 0, storeDir) // reserve a port, then take NATS away
	port := srv.Port()
	url := srv.ClientURL()
	srv.Shutdown()

	f := setup(t, ctx, testenv.NATS(t)) // the schema; this test's NATS is the one above
	stream := testenv.UniqueName(t, "S")
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{URL: url, Service: "test", Pool: f.pool,
		Stream: events.Stream{Name: stream, Subjects: []string{f.subject + ".>"}},
		Relay:  events.RelayConfig{MinBackoff: time.Hour, MaxBackoff: time.Hour}})
	if err != nil {
		t.Fatalf("OpenPublisher with NATS down: %v", err)
	}
	t.Cleanup(pub.Conn.Close)
	f.change(t, ctx, "while NATS is down")
	runInBackground(t, pub.Relay.Run)
	eventually(t, 10*time.Second, "the relay to find NATS away", func() bool { return pub.Relay.Stats().Failures > 0 })

	testenv.NATSServer(t, port, storeDir)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	eventually(t, 30*time.Second, "the event published once NATS came up", func() bool {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 1
	})
}

// TestRepublishAfterTheDuplicateWindowIsNotStoredTwice reproduces a relay killed between
// NATS's ack and marking the row sent, restarted after the stream's duplicate window (here
// 1 s instead of 10 min): the event is in the stream once, not twice.
func TestRepublishAfterTheDuplicateWindowIsNotStoredTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lookUp bool
		want   uint64
	}{{"with the look-up", true, 1}, {"without it (the old behaviour)", false, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, time.Minute)
			f := setup(t, ctx, testenv.NATS(t))
			window := time.Second
			if _, err := events.EnsureStream(ctx, f.js, f.stream, []string{f.subject + ".>"}, events.StreamOptions{Duplicates: window}); err != nil {
				t.Fatal(err)
			}
			id := f.change(t, ctx, "published, then the relay died")
			// What the dead relay did: publish with the event id, get the ack, never mark it.
			msg := nats.NewMsg(f.subject + ".thing.created")
			msg.Data = []byte("x")
			if _, err := f.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.pool.Exec(ctx, "UPDATE outbox SET created_at = created_at - interval '1 hour'"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(window + 500*time.Millisecond) // the restart comes after the window
			cfg := events.RelayConfig{DuplicateWindow: window}
			if tc.lookUp {
				cfg.Stream = f.stream
			}
			startRelay(t, f, cfg)
			eventually(t, 20*time.Second, "the row marked sent", func() bool {
				return count(t, ctx, f.pool, "SELECT count(*) FROM outbox WHERE sent_at IS NULL") == 0
			})
			if got := streamMsgs(t, ctx, f); got != tc.want {
				t.Errorf("the event is in the stream %d times, want %d", got, tc.want)
			}
		})
	}
}
