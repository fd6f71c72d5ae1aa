package inventory_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// publish sends m on its subject as the outbox relay does: CloudEvents headers, ce-id as
// Nats-Msg-Id.
func publish(t *testing.T, js jetstream.JetStream, m proto.Message, at time.Time) string {
	t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return publishRaw(t, js, events.SubjectOf(m), data, at)
}

func publishRaw(t *testing.T, js jetstream.JetStream, subject string, data []byte, at time.Time) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(events.HeaderSpecVersion, events.SpecVersion)
	msg.Header.Set(events.HeaderID, id)
	msg.Header.Set(events.HeaderSource, "plinth/test")
	msg.Header.Set(events.HeaderTime, at.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(events.HeaderContentType, events.ContentTypeProtobuf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	return id
}

// consumers runs the inventory's consumers until the returned stop is called.
func consumers(t *testing.T, js jetstream.JetStream, pool *pgxpool.Pool, st *store.Store) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, c := range inventory.Consumers(js, pool, inventory.Handler{Store: st}, slog.New(slog.DiscardHandler)) {
		c.AckWait = 5 * time.Second
		go func() { _ = inventory.Run(ctx, c); done <- struct{}{} }()
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// setup opens a store on a fresh database and connects to a private NATS server: the streams'
// names are the publishers' (PLINTH_LVMD, PLINTH_KAAS), so a shared server would mix this
// test's events with other tests'.
func setup(t *testing.T) (context.Context, *pgxpool.Pool, *store.Store, jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, err := pg.Open(ctx, testenv.DB(t).URL, store.Schema, store.Migrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv := testenv.NATSServer(t, 0, t.TempDir())
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, pool, store.New(pool), js
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsumersApplyEachEventOnceAcrossRestarts: the consumers wait for streams that do not
// exist yet, apply heartbeats, capacity and machines, terminate a poison event without
// blocking the ones behind it, and after a restart resume where they left off: events
// published while stats was down arrive, none is applied twice.
func TestConsumersApplyEachEventOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	ctx, pool, st, js := setup(t)

	stop := consumers(t, js, pool, st) // before the streams exist
	time.Sleep(200 * time.Millisecond)
	for _, s := range []events.Stream{inventory.LVMDStream, inventory.KaasStream} {
		if _, err := events.EnsureStream(ctx, js, s.Name, s.Subjects, events.StreamOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	hb := &eventsv1.NodeHeartbeat{Node: "node-1", Addresses: []string{"10.0.0.1"}, IntervalSeconds: 5, AgentVersion: "v0.1.0",
		DeviceClasses: []*eventsv1.DeviceClassCapacity{{Name: "ssd", VolumeGroup: "vg0", Default: true, SizeBytes: 100 << 30, FreeBytes: 60 << 30, VolumeCount: 4}}}
	publish(t, js, hb, now)
	publishRaw(t, js, events.SubjectOf(hb), []byte("\xff\xffnot protobuf"), now) // poison
	publish(t, js, &eventsv1.NodeHeartbeat{Node: strings.Repeat("x", 300)}, now) // out of bounds
	publish(t, js, hb, now.Add(time.Second))
	publish(t, js, &eventsv1.MachineStateChanged{Cluster: "prod", Pool: "control-plane", Name: "cp-1", Addresses: []string{"10.0.1.1"},
		State: eventsv1.MachineState_MACHINE_STATE_READY, Role: eventsv1.MachineRole_MACHINE_ROLE_CONTROL_PLANE, Provider: "maas"}, now)
	eventually(t, "the events behind the poison", func() bool {
		nodes, _ := st.StorageNodes(ctx)
		ms, _ := st.Machines(ctx)
		return len(nodes) == 1 && nodes[0].Heartbeats == 2 && len(ms) == 1
	})

	stop()
	// While stats is down: another heartbeat and a capacity change.
	publish(t, js, hb, now.Add(2*time.Second))
	publish(t, js, &eventsv1.CapacityChanged{Node: "node-1", DeviceClass: &eventsv1.DeviceClassCapacity{Name: "ssd", VolumeGroup: "vg0",
		SizeBytes: 100 << 30, FreeBytes: 50 << 30, VolumeCount: 5}}, now.Add(3*time.Second))
	consumers(t, js, pool, st)
	eventually(t, "the events published while down", func() bool {
		nodes, _ := st.StorageNodes(ctx)
		return len(nodes) == 1 && nodes[0].Heartbeats == 3 && len(nodes[0].Classes) == 1 && nodes[0].Classes[0].Volumes == 5
	})
	// Nothing more arrives: every event was applied once.
	time.Sleep(500 * time.Millisecond)
	nodes, _ := st.StorageNodes(ctx)
	if nodes[0].Heartbeats != 3 {
		t.Fatalf("%d heartbeats applied, 3 published", nodes[0].Heartbeats)
	}
	c, err := js.Consumer(ctx, inventory.LVMDStream.Name, inventory.LVMDDurable)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.Info(ctx); err != nil || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("consumer %+v %v: the poison events must be terminated, not left pending", info, err)
	}
}
