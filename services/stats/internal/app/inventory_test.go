package app_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

// publisher plays a service that publishes through the events library exactly as lvmd-agent
// and kaas do: its own schema's outbox, the relay, its stream ensured at start.
func (e *env) publisher(t *testing.T, service string, stream events.Stream) func(msgs ...proto.Message) {
	t.Helper()
	db := testenv.DB(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pool, err := pg.Open(ctx, db.URL, db.Schema, fstest.MapFS{}, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pub, err := events.OpenPublisher(ctx, events.PublisherConfig{URL: e.nats.ClientURL(), Service: service, Stream: stream, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = pub.Relay.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; pub.Conn.Close() })
	return func(msgs ...proto.Message) {
		t.Helper()
		err := pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			for _, m := range msgs {
				if _, err := (events.Outbox{}).Add(ctx, tx, events.Event{Payload: m}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func nodesOf(t *testing.T, c statspb.StatsServiceClient) map[string]*rstats.NodeInfo {
	t.Helper()
	resp, err := c.GetClusterNodes(authed(t), &statspb.GetClusterNodesRequest{})
	if err != nil {
		return nil
	}
	out := map[string]*rstats.NodeInfo{}
	for _, n := range resp.GetNodes() {
		out[n.GetName()] = n
	}
	return out
}

// TestInventoryFromTheSuitesEvents: lvmd-agent's heartbeats and capacity and kaas's machines,
// published as those services publish them, become nodes with their roles, addresses and age;
// their LVM capacity counts in the cluster's usage; a node whose heartbeats stop turns
// NOT_READY; a restart of stats keeps every node, catches up on what was published while it
// was down, and applies no event twice.
func TestInventoryFromTheSuitesEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(t, "PLINTH_STATS_HEARTBEAT_MISSES=3")
	first := e.start(t, cfg) // before the publishers created their streams
	lvmd := e.publisher(t, "lvmd-agent", events.StreamOf(&eventsv1.NodeHeartbeat{}))
	kaas := e.publisher(t, "kaas", events.StreamOf(&eventsv1.MachineStateChanged{}))

	class := &eventsv1.DeviceClassCapacity{Name: "ssd", VolumeGroup: "vg-ssd", Default: true, SizeBytes: 100 << 30, FreeBytes: 75 << 30, VolumeCount: 3}
	hb := func(node, addr string) *eventsv1.NodeHeartbeat {
		return &eventsv1.NodeHeartbeat{Node: node, Addresses: []string{addr}, DeviceClasses: []*eventsv1.DeviceClassCapacity{class},
			TotalSizeBytes: class.SizeBytes, TotalFreeBytes: class.FreeBytes, IntervalSeconds: 1, AgentVersion: "v0.1.0"}
	}
	machine := func(name string, role eventsv1.MachineRole, state eventsv1.MachineState) *eventsv1.MachineStateChanged {
		return &eventsv1.MachineStateChanged{Cluster: "prod", Pool: "workers", Name: name, Addresses: []string{"10.0.1.9"}, Role: role,
			State: state, Provider: "maas", ProviderStatus: "Deployed", Message: map[bool]string{true: "deployment timed out"}[state == eventsv1.MachineState_MACHINE_STATE_FAILED]}
	}
	lvmd(hb("store-1", "10.0.0.1"), hb("store-2", "10.0.0.2"))
	kaas(machine("cp-1", eventsv1.MachineRole_MACHINE_ROLE_CONTROL_PLANE, eventsv1.MachineState_MACHINE_STATE_READY),
		machine("store-2", eventsv1.MachineRole_MACHINE_ROLE_WORKER, eventsv1.MachineState_MACHINE_STATE_READY),
		machine("w-9", eventsv1.MachineRole_MACHINE_ROLE_WORKER, eventsv1.MachineState_MACHINE_STATE_FAILED))

	ready, notReady := rstats.ResourceStatus_RESOURCE_READY, rstats.ResourceStatus_RESOURCE_NOT_READY
	var nodes map[string]*rstats.NodeInfo
	eventually(t, 30*time.Second, "four nodes", func() (bool, string) {
		nodes = nodesOf(t, first.client)
		return len(nodes) == 4 && nodes["store-1"].GetStatus() == ready, fmt20(nodes)
	})
	if n := nodes["store-2"]; n.GetStatus() != ready || len(n.GetRoles()) != 2 || n.GetRoles()[0] != "storage" || n.GetRoles()[1] != "worker" ||
		n.GetInternalIp() != "10.0.0.2" || n.GetAge() == nil {
		t.Errorf("store-2 (a storage node and a kaas worker): %v", n)
	}
	if nodes["cp-1"].GetRoles()[0] != "control-plane" || nodes["w-9"].GetStatus() != notReady {
		t.Errorf("machines: %v %v", nodes["cp-1"], nodes["w-9"])
	}
	st := stats(t, first.client, "the inventory's summary", func(s *rstats.ClusterStats) bool { return s.GetStatus() != "" })
	if st.GetStatus() != "HEALTH_WARN" || len(st.GetCrashes()) != 1 || st.GetCrashes()[0].GetDescription() != "machine w-9 of cluster prod failed: deployment timed out" ||
		st.GetData().GetUsage().GetTotal() != 200<<30 || st.GetData().GetUsage().GetAvailable() != 150<<30 || st.GetData().GetVolumes() != 6 {
		t.Errorf("stats from the inventory: %v", st)
	}
	if r := radarOf(t, first.client); r.GetNodesHealth() != 75 || r.GetCapacityAvailable() != 75 || r.GetClusterHealth() != 50 {
		t.Errorf("radar %v; want nodes 75 (3 of 4), capacity 75, health 50", r)
	}
	age := nodes["store-1"].GetAge().AsTime()

	// store-2 keeps sending heartbeats, store-1 stops.
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		for {
			select {
			case <-stop:
				return
			case <-time.After(400 * time.Millisecond):
				lvmd(hb("store-2", "10.0.0.2"))
			}
		}
	}()
	eventually(t, 30*time.Second, "store-1 to go stale", func() (bool, string) {
		nodes = nodesOf(t, first.client)
		return nodes["store-1"].GetStatus() == notReady && nodes["store-2"].GetStatus() == ready, fmt20(nodes)
	})
	close(stop)
	<-beating

	// A restart, with events published while stats is down.
	first.stop()
	lvmd(hb("store-1", "10.0.0.1"))
	kaas(machine("w-9", eventsv1.MachineRole_MACHINE_ROLE_WORKER, eventsv1.MachineState_MACHINE_STATE_READY))
	second := e.start(t, cfg)
	eventually(t, 30*time.Second, "the nodes after the restart", func() (bool, string) {
		nodes = nodesOf(t, second.client)
		return len(nodes) == 4 && nodes["store-1"].GetStatus() == ready && nodes["w-9"].GetStatus() == ready, fmt20(nodes)
	})
	if got := nodes["store-1"].GetAge().AsTime(); !got.Equal(age) {
		t.Errorf("store-1's age changed across the restart: %v → %v", age, got)
	}
	// Every heartbeat of store-1 was applied once: one before the restart, one while stats was down.
	pool, err := pg.Open(ctxT(t), e.dbURL, store.Schema, store.Migrations, events.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	stored, err := store.New(pool).StorageNodes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range stored {
		if n.Name == "store-1" && n.Heartbeats != 2 {
			t.Errorf("store-1: %d heartbeats applied, 2 published", n.Heartbeats)
		}
	}
}

// fmt20 shows nodes compactly for a failure message.
func fmt20(nodes map[string]*rstats.NodeInfo) string {
	out := ""
	for name, n := range nodes {
		out += name + "=" + n.GetStatus().String() + " "
	}
	return out
}
