package upstreamtest

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestWALArchivedEvents archives through the upstream WAL client and receives the batched
// plinth.cnpgi.wal.archived events from JetStream, CloudEvents headers included. (The events
// package shares no protobuf names with upstream's, so this binary can link it.)
func TestWALArchivedEvents(t *testing.T) {
	t.Parallel()
	natsURL := testenv.NATS(t)
	start := time.Now().Add(-time.Second) // a shared NATS keeps other runs' events: read from here
	p := startPlugin(t, 1, "PLINTH_NATS_URL="+natsURL, "PLINTH_CNPGI_WAL_EVENT_BATCH=2", "PLINTH_CNPGI_WAL_EVENT_INTERVAL=200ms")
	ctx := ctxT(t)
	server := testenv.UniqueName(t, "ev")
	def := cluster(server, nil)
	pgwal := p.owner.mkdir(t, filepath.Join(p.home, "pgdata-events", "pg_wal"))
	var want []string
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("0000000100000000000000%02X", i)
		path, _ := p.segment(t, pgwal, name, 7)
		if _, err := wal.NewWALClient(p.conn).Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		got = got[:0]
		cons, err := js.OrderedConsumer(ctx, "PLINTH_CNPGI", jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{platformevents.SubjectOf(&eventsv1.WALArchived{})}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start,
		})
		if err != nil { // the stream appears when the plugin starts
			time.Sleep(100 * time.Millisecond)
			continue
		}
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			h := msg.Headers()
			if h.Get("ce-type") != "plinth.events.v1.WALArchived" || h.Get("ce-source") != "plinth/cnpgi-plugin" || h.Get("ce-id") == "" {
				t.Fatalf("headers %v", h)
			}
			ev := &eventsv1.WALArchived{}
			if err := proto.Unmarshal(msg.Data(), ev); err != nil {
				t.Fatal(err)
			}
			if ev.GetServerName() != server {
				continue // another test's cluster on a shared NATS
			}
			n := int64(len(ev.GetWalNames()))
			if ev.GetObjectStore() != "local" || n > 2 || ev.GetSegments() != n || ev.GetSizeBytes() != n<<20 || ev.GetStoredBytes() <= 0 ||
				ev.GetFirstArchivedAt().AsTime().After(ev.GetLastArchivedAt().AsTime()) {
				t.Fatalf("event %v", ev)
			}
			got = append(got, ev.GetWalNames()...)
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("announced %v, want %v", got, want)
	}
}
