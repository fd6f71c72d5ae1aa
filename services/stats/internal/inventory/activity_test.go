package inventory_test

import (
	"testing"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// TestActivityFromEvents: kaas's cluster and lvmd-agent's volume events on NATS become the
// activity, newest first, with the actor the event names (none for the system's own work),
// once each although the consumers restart.
func TestActivityFromEvents(t *testing.T) {
	t.Parallel()
	ctx, pool, st, js := setup(t)
	for _, s := range []events.Stream{inventory.LVMDStream, inventory.KaasStream} {
		if _, err := events.EnsureStream(ctx, js, s.Name, s.Subjects, events.StreamOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ops := &eventsv1.Actor{UserId: "0b5e8a6e-8c1b-4f5e-9a57-3f1d2c4b5a69", Username: "ops"}
	now := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	publish(t, js, &eventsv1.ClusterStatusChanged{Cluster: "c1", Status: eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_PROVISIONING,
		K8SVersion: "v1.33.13", Provider: "vagrant", Actor: ops}, now)
	publish(t, js, &eventsv1.ClusterStatusChanged{Cluster: "c1", Status: eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_RUNNING,
		PreviousStatus: eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_PROVISIONING}, now.Add(time.Second))
	publish(t, js, &eventsv1.VolumeCreated{Node: "n1", DeviceClass: "ssd", Name: "v1", SizeBytes: 1 << 30, Actor: ops}, now.Add(2*time.Second))
	stop := consumers(t, js, pool, st)
	list := func() []inventory.Activity {
		a, err := st.Activity(ctx, inventory.ActivityCursor{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	eventually(t, "three activities", func() bool { return len(list()) == 3 })
	stop()
	publish(t, js, &eventsv1.VolumeRemoved{Node: "n1", DeviceClass: "ssd", Name: "v1"}, now.Add(3*time.Second))
	consumers(t, js, pool, st)
	eventually(t, "the activity published while stats was down", func() bool { return len(list()) == 4 })
	time.Sleep(300 * time.Millisecond)
	got := list()
	want := []struct {
		summary, actor string
	}{
		{"volume v1 removed from class ssd on node n1", ""},
		{"volume v1 (1 GiB) created in class ssd on node n1", "ops"},
		{"cluster c1: provisioning → running", ""},
		{"cluster c1 created (Kubernetes v1.33.13 on vagrant): provisioning", "ops"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d activities, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		a := got[i]
		if a.Summary != w.summary || a.ActorName != w.actor || (w.actor != "") != (a.ActorID == ops.GetUserId()) {
			t.Errorf("activity %d: %+v, want %q by %q", i, a, w.summary, w.actor)
		}
		if !a.At.Equal(now.Add(time.Duration(len(want)-1-i) * time.Second)) {
			t.Errorf("activity %d at %v, want the event's time", i, a.At)
		}
	}
	// Paging: the entries after the second.
	older, err := st.Activity(ctx, inventory.ActivityCursor{At: got[1].At, ID: got[1].ID}, 100)
	if err != nil || len(older) != 2 || older[0].ID != got[2].ID || older[1].ID != got[3].ID {
		t.Fatalf("activity after %+v: %+v %v", got[1], older, err)
	}
}
