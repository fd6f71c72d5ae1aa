package inventory

import (
	"reflect"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestBuild(t *testing.T) {
	stale := Reader{}.staleAfter // 3 intervals, 30 s when the agent does not say
	nodes := []StorageNode{
		{Name: "fresh", FirstSeen: t0.Add(-time.Hour), HeartbeatAt: t0.Add(-25 * time.Second), IntervalSeconds: 10,
			Addresses: []string{"10.0.0.1", "203.0.113.7"}, Classes: []DeviceClass{{SizeBytes: 100, FreeBytes: 40, Volumes: 2}}},
		{Name: "stale", FirstSeen: t0.Add(-time.Hour), HeartbeatAt: t0.Add(-31 * time.Second), IntervalSeconds: 10,
			Classes: []DeviceClass{{SizeBytes: 50, FreeBytes: 50}}},
		{Name: "silent", FirstSeen: t0, Addresses: []string{"node-3.lan"}},
		{Name: "both", FirstSeen: t0.Add(-time.Minute), HeartbeatAt: t0, IntervalSeconds: 0},
	}
	machines := []Machine{
		{Name: "both", Cluster: "c", Role: eventsv1.MachineRole_MACHINE_ROLE_CONTROL_PLANE, State: eventsv1.MachineState_MACHINE_STATE_UPDATING,
			Addresses: []string{"10.0.0.4"}, FirstSeen: t0.Add(-2 * time.Minute)},
		{Name: "worker", Cluster: "c", Role: eventsv1.MachineRole_MACHINE_ROLE_WORKER, State: eventsv1.MachineState_MACHINE_STATE_READY, FirstSeen: t0},
		{Name: "broken", Cluster: "c", Role: eventsv1.MachineRole_MACHINE_ROLE_WORKER, State: eventsv1.MachineState_MACHINE_STATE_FAILED,
			Message: "PXE boot timed out", FirstSeen: t0},
		{Name: "gone", Cluster: "c", State: eventsv1.MachineState_MACHINE_STATE_RELEASED, FirstSeen: t0},
	}
	inv := Build(t0, nodes, machines, stale)
	want := []cluster.Node{
		{Name: "both", Status: cluster.StatusProgressing, Roles: []string{"control-plane", "storage"}, InternalIP: "10.0.0.4", Since: t0.Add(-2 * time.Minute)},
		{Name: "broken", Status: cluster.StatusNotReady, Roles: []string{"worker"}, Since: t0},
		{Name: "fresh", Status: cluster.StatusReady, Roles: []string{"storage"}, InternalIP: "10.0.0.1", ExternalIP: "203.0.113.7", Since: t0.Add(-time.Hour)},
		{Name: "silent", Status: cluster.StatusNotReady, Roles: []string{"storage"}, InternalIP: "node-3.lan", Since: t0},
		{Name: "stale", Status: cluster.StatusNotReady, Roles: []string{"storage"}, Since: t0.Add(-time.Hour)},
		{Name: "worker", Status: cluster.StatusReady, Roles: []string{"worker"}, Since: t0},
	}
	if !reflect.DeepEqual(inv.Nodes, want) {
		t.Fatalf("nodes\n%+v\nwant\n%+v", inv.Nodes, want)
	}
	if inv.Capacity != (cluster.Usage{Used: 60, Available: 90, Total: 150}) || inv.Volumes != 2 {
		t.Fatalf("capacity %+v volumes %d", inv.Capacity, inv.Volumes)
	}
	var problems []string
	for _, p := range inv.Problems {
		problems = append(problems, p.Name+": "+p.Message)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"NODE_STALE: storage node stale: no heartbeat for 31s", "NODE_STALE: storage node silent: no heartbeat yet",
		"MACHINE_FAILED: machine broken of cluster c failed: PXE boot timed out"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}

func TestStaleAfter(t *testing.T) {
	r := Reader{Misses: 2, DefaultInterval: time.Minute}
	if got := r.staleAfter(0); got != 2*time.Minute {
		t.Errorf("unknown interval: %v", got)
	}
	if got := r.staleAfter(5); got != 10*time.Second {
		t.Errorf("5 s interval: %v", got)
	}
}
