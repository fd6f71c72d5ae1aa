package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// TestEventsDescribeEveryChange drives volumes through the agent and by hand, and reads the
// events from the outbox and from the stream: each change is reported once, with the node.
func TestEventsDescribeEveryChange(t *testing.T) {
	t.Parallel()
	began := time.Now()
	e := newEnv(t, envOptions{size: 4 << 30})
	a := e.start(t, e.config(t))
	ctx := ctxT(t)
	p := e.pool(t)
	// The gateway names the verified caller to the agent in these headers.
	const userID = "5f0c1d7e-3b7a-4c1e-9f55-8d2b6a4e0c11"
	userCtx := metadata.AppendToOutgoingContext(ctx, "plinth-account-id", userID, "plinth-account-name", "ops")
	isUser := func(a *eventsv1.Actor) bool { return a.GetUserId() == userID && a.GetUsername() == "ops" }

	if _, err := a.lv.CreateLV(userCtx, &lvmdpb.CreateLVRequest{Name: "ev-1", SizeGb: 1, Tags: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lv.ResizeLV(userCtx, &lvmdpb.ResizeLVRequest{Name: "ev-1", SizeGb: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lv.RemoveLV(userCtx, &lvmdpb.RemoveLVRequest{Name: "ev-1"}); err != nil {
		t.Fatal(err)
	}
	e.vgs[0].Lvm(t, "lvcreate", "-n", "byhand", "-L", "1g", "-W", "y", "-y", e.vgs[0].Name)

	created := func() []*eventsv1.VolumeCreated {
		return outboxEvents(t, p, events.SubjectOf(&eventsv1.VolumeCreated{}), func() *eventsv1.VolumeCreated { return &eventsv1.VolumeCreated{} })
	}
	eventually(t, ctx, "VolumeCreated for the volume made by hand", func() bool {
		return slices.ContainsFunc(created(), func(c *eventsv1.VolumeCreated) bool { return c.GetName() == "byhand" })
	})
	// The agent records its own changes as it makes them: each is reported exactly once.
	names := map[string]int{}
	for _, c := range created() {
		names[c.GetName()]++
		if c.GetNode() != e.node || c.GetDeviceClass() != "ssd" {
			t.Fatalf("event %v", c)
		}
		if c.GetName() == "ev-1" && (!slices.Equal(c.GetTags(), []string{"t1"}) || !isUser(c.GetActor())) {
			t.Fatalf("created event without the tags or the caller: %v", c)
		}
		if c.GetName() == "byhand" && c.GetActor() != nil {
			t.Fatalf("the agent's own discovery names an actor: %v", c)
		}
	}
	if names["byhand"] != 1 || names["ev-1"] != 1 || len(names) != 2 {
		t.Fatalf("created events per volume %v", names)
	}
	removed := outboxEvents(t, p, events.SubjectOf(&eventsv1.VolumeRemoved{}), func() *eventsv1.VolumeRemoved { return &eventsv1.VolumeRemoved{} })
	if len(removed) != 1 || removed[0].GetName() != "ev-1" || removed[0].GetNode() != e.node || !isUser(removed[0].GetActor()) {
		t.Fatalf("removed events %v", removed)
	}
	resized := outboxEvents(t, p, events.SubjectOf(&eventsv1.VolumeResized{}), func() *eventsv1.VolumeResized { return &eventsv1.VolumeResized{} })
	if len(resized) != 1 || resized[0].GetName() != "ev-1" || resized[0].GetSizeBytes() != 2<<30 || resized[0].GetPreviousSizeBytes() != 1<<30 || !isUser(resized[0].GetActor()) {
		t.Fatalf("resized %v", resized)
	}
	free, _ := a.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{})
	// The poll reads the volume group and its volumes side by side: one that ran while the
	// volume was made by hand may have seen it in one and not the other, which the next poll
	// corrects with another event.
	var last *eventsv1.DeviceClassCapacity
	eventually(t, ctx, "the capacity event of the volume made by hand", func() bool {
		caps := outboxEvents(t, p, events.SubjectOf(&eventsv1.CapacityChanged{}), func() *eventsv1.CapacityChanged { return &eventsv1.CapacityChanged{} })
		last = caps[len(caps)-1].GetDeviceClass()
		return last.GetFreeBytes() == free.GetFreeBytes() && last.GetVolumeCount() == 1
	})
	if last.GetName() != "ssd" || last.GetVolumeGroup() != e.vgs[0].Name || !last.GetDefault() {
		t.Fatalf("last capacity event %v, free now %d", last, free.GetFreeBytes())
	}

	// The heartbeat is the node's inventory; it is sent at start and reaches NATS.
	hbs := outboxEvents(t, p, events.SubjectOf(&eventsv1.NodeHeartbeat{}), func() *eventsv1.NodeHeartbeat { return &eventsv1.NodeHeartbeat{} })
	if len(hbs) == 0 {
		t.Fatal("no heartbeat")
	}
	hb := hbs[0]
	if hb.GetNode() != e.node || !slices.Equal(hb.GetAddresses(), []string{"192.0.2.10"}) || len(hb.GetDeviceClasses()) != 1 ||
		hb.GetTotalSizeBytes() == 0 || hb.GetIntervalSeconds() != 30 || hb.GetAgentVersion() == "" {
		t.Fatalf("heartbeat %v", hb)
	}
	got := readStream(t, ctx, e.natsURL, events.SubjectOf(&eventsv1.NodeHeartbeat{}), began, func(data []byte) bool {
		var m eventsv1.NodeHeartbeat
		return proto.Unmarshal(data, &m) == nil && m.GetNode() == e.node
	})
	if got.Headers().Get("ce-type") != "plinth.events.v1.NodeHeartbeat" || got.Headers().Get("ce-source") != "plinth/lvmd-agent" {
		t.Fatalf("headers %v", got.Headers())
	}
	// The actor reaches NATS with the event.
	readStream(t, ctx, e.natsURL, events.SubjectOf(&eventsv1.VolumeRemoved{}), began, func(data []byte) bool {
		var m eventsv1.VolumeRemoved
		return proto.Unmarshal(data, &m) == nil && m.GetNode() == e.node && isUser(m.GetActor())
	})
}

// readStream returns the first message on subject since start that match accepts.
func readStream(t *testing.T, ctx context.Context, url, subject string, start time.Time, match func([]byte) bool) jetstream.Msg {
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
	stream := events.StreamOf(&eventsv1.NodeHeartbeat{}).Name
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Next(jetstream.FetchMaxWait(20 * time.Second))
		if err != nil {
			t.Fatalf("no matching message on %s: %v", subject, err)
		}
		if match(m.Data()) {
			return m
		}
	}
}
