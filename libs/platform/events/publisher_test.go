package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestOpenPublisherEnsuresStreamAndRelay: the relay ensures the stream once it runs (the
// publisher itself needs no NATS to open).
func TestOpenPublisherEnsuresStreamAndRelay(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t, time.Minute)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, db.Schema, appMigrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	stream := testenv.UniqueName(t, "PUB")
	subject := "plinth." + stream + ".>"
	if _, err := events.OpenPublisher(ctx, events.PublisherConfig{URL: testenv.NATS(t), Stream: events.Stream{Name: stream, Subjects: []string{subject}}, Pool: pool}); err == nil {
		t.Fatal("a publisher without a service name was accepted")
	}
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{
		URL: testenv.NATS(t), Service: "test", Stream: events.Stream{Name: stream, Subjects: []string{subject}}, Pool: pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Conn.Close()
	runInBackground(t, pub.Relay.Run)
	t.Cleanup(func() { _ = pub.JetStream.DeleteStream(context.Background(), stream) })
	var s jetstream.Stream
	eventually(t, 20*time.Second, "the stream ensured", func() bool {
		s, err = pub.JetStream.Stream(ctx, stream)
		return err == nil
	})
	if got := s.CachedInfo().Config.Subjects; len(got) != 1 || got[0] != subject {
		t.Fatalf("stream subjects %v", got)
	}
	if pub.Relay == nil || pub.Conn.Opts.Name != "plinth-test" {
		t.Fatalf("relay %v, client name %q", pub.Relay, pub.Conn.Opts.Name)
	}
}
