package events_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// publishRaw publishes an event straight to the stream, bypassing the outbox, with its
// own Nats-Msg-Id so that the stream does not deduplicate repeats of one ce-id.
func publishRaw(t *testing.T, ctx context.Context, f fixture, verb, ceID, msgID string) {
	t.Helper()
	msg := nats.NewMsg(f.subject + "." + verb)
	msg.Header.Set(events.HeaderSpecVersion, events.SpecVersion)
	msg.Header.Set(events.HeaderID, ceID)
	msg.Header.Set(events.HeaderSource, "plinth/test")
	msg.Header.Set(events.HeaderType, "plinth.test."+verb)
	msg.Header.Set(events.HeaderTime, "2026-01-02T03:04:05.5Z")
	msg.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	msg.Data = []byte(verb)
	if _, err := f.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatal(err)
	}
}

func TestConsumerExactlyOnceWithRedelivery(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, 2*time.Minute)
	f := setup(t, ctx, testenv.NATS(t))

	var mu sync.Mutex
	attempts := map[string]int{}
	var first events.Delivery
	handler := func(ctx context.Context, tx pgx.Tx, d events.Delivery) error {
		mu.Lock()
		attempts[d.ID]++
		n := attempts[d.ID]
		if d.ID == "plain" {
			first = d
		}
		mu.Unlock()
		switch {
		case d.ID == "flaky" && n == 1:
			// The handler's writes are rolled back with the processed_events row.
			if err := recordingHandler(ctx, tx, d); err != nil {
				return err
			}
			return errors.New("transient failure")
		case d.ID == "slow" && n == 1:
			// Outlives AckWait: JetStream redelivers while this attempt still runs.
			time.Sleep(1500 * time.Millisecond)
		case d.ID == "poison":
			return events.Permanent(errors.New("cannot decode"))
		}
		return recordingHandler(ctx, tx, d)
	}
	c := events.Consumer{
		JetStream: f.js, Pool: f.pool, Stream: f.stream, Durable: "exactly_once",
		FilterSubjects: []string{f.subject + ".>"}, Handler: handler, AckWait: time.Second,
	}
	runInBackground(t, c.Run)

	publishRaw(t, ctx, f, "plain", "plain", "m1")
	publishRaw(t, ctx, f, "dup", "dup", "m2")
	publishRaw(t, ctx, f, "dup", "dup", "m3") // same event delivered twice
	publishRaw(t, ctx, f, "flaky", "flaky", "m4")
	publishRaw(t, ctx, f, "poison", "poison", "m5")
	// Last: events buffered behind it would be redelivered too during its sleep.
	publishRaw(t, ctx, f, "slow", "slow", "m6")

	eventually(t, 30*time.Second, "all events handled", func() bool {
		return count(t, ctx, f.pool, "SELECT count(DISTINCT event_id) FROM handled") == 4
	})
	cons, err := f.js.Consumer(ctx, f.stream, "exactly_once")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "nothing pending", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	for _, id := range []string{"plain", "dup", "flaky", "slow"} {
		if n := count(t, ctx, f.pool, "SELECT count(*) FROM handled WHERE event_id = $1", id); n != 1 {
			t.Errorf("event %s applied %d times, want exactly 1", id, n)
		}
	}
	if n := count(t, ctx, f.pool, "SELECT count(*) FROM handled WHERE event_id = 'poison'"); n != 0 {
		t.Errorf("poison event applied %d times", n)
	}
	if n := count(t, ctx, f.pool, "SELECT count(*) FROM processed_events WHERE consumer = 'exactly_once'"); n != 4 {
		t.Errorf("processed_events has %d rows, want 4", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts["flaky"] != 2 {
		t.Errorf("flaky handled %d times, want 2 (fail, then succeed)", attempts["flaky"])
	}
	if attempts["dup"] != 1 {
		t.Errorf("dup reached the handler %d times, want 1 (second delivery skipped)", attempts["dup"])
	}
	if attempts["poison"] != 1 {
		t.Errorf("poison handled %d times, want 1 (terminated)", attempts["poison"])
	}
	if first.Source != "plinth/test" || first.Type != "plinth.test.plain" || string(first.Data) != "plain" ||
		!first.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) || first.NumDelivered != 1 {
		t.Errorf("decoded delivery %+v", first)
	}
	if n := count(t, ctx, f.pool, "SELECT count(*) FROM handled WHERE trace_id = '0af7651916cd43dd8448eb211c80319c'"); n != 4 {
		t.Errorf("trace context reached %d of 4 handlers", n)
	}
}

func TestConsumerTerminatesEventsWithoutID(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	var mu sync.Mutex
	calls := 0
	runInBackground(t, events.Consumer{
		JetStream: f.js, Pool: f.pool, Stream: f.stream, Durable: "noid",
		Handler: func(ctx context.Context, tx pgx.Tx, d events.Delivery) error {
			mu.Lock()
			calls++
			mu.Unlock()
			return nil
		},
	}.Run)
	if _, err := f.js.Publish(ctx, f.subject+".bare", []byte("x")); err != nil {
		t.Fatal(err)
	}
	cons, err := f.js.Consumer(ctx, f.stream, "noid")
	for err != nil {
		time.Sleep(20 * time.Millisecond)
		cons, err = f.js.Consumer(ctx, f.stream, "noid")
	}
	eventually(t, 10*time.Second, "message terminated", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.AckFloor.Stream == 1 && info.NumAckPending == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if calls != 0 {
		t.Fatalf("handler called %d times for an event without ce-id", calls)
	}
}

func TestConsumerFailsWithoutStream(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	f := setup(t, ctx, testenv.NATS(t))
	err := events.Consume(ctx, f.js, f.pool, "NO_SUCH_"+f.stream, "d", nil, recordingHandler)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("err = %v, want ErrStreamNotFound", err)
	}
}
