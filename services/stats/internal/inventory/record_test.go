package inventory_test

import (
	"fmt"
	"testing"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

var r0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(n int) time.Time { return r0.Add(time.Duration(n) * time.Second) }

func dc(name string, free int64, observed int) inventory.DeviceClass {
	return inventory.DeviceClass{Name: name, VolumeGroup: "vg-" + name, SizeBytes: 100, FreeBytes: free, ObservedAt: at(observed)}
}

func hb(n int, addr string, classes ...inventory.DeviceClass) inventory.Heartbeat {
	for i := range classes {
		classes[i].ObservedAt = time.Time{} // a heartbeat's classes are observed at its time
	}
	return inventory.Heartbeat{Node: "n1", At: at(n), IntervalSeconds: 10 + n, Addresses: []string{addr}, AgentVersion: "v" + addr, Classes: classes}
}

// TestApplyHeartbeat: the newest heartbeat's state wins, every heartbeat counts, the earliest
// sighting stays; classes follow the newest heartbeat unless a newer capacity report holds them.
func TestApplyHeartbeat(t *testing.T) {
	known := inventory.StorageNode{Name: "n1", FirstSeen: at(1), HeartbeatAt: at(5), IntervalSeconds: 15, Heartbeats: 3,
		Addresses: []string{"a5"}, AgentVersion: "va5", Classes: []inventory.DeviceClass{dc("hdd", 9, 5), dc("nvme", 8, 9), dc("ssd", 7, 5)}}
	for _, tc := range []struct {
		name   string
		before inventory.StorageNode
		found  bool
		hb     inventory.Heartbeat
		want   inventory.StorageNode
	}{
		{"a new node", inventory.StorageNode{}, false, hb(2, "a2", dc("ssd", 1, 0)),
			inventory.StorageNode{Name: "n1", FirstSeen: at(2), HeartbeatAt: at(2), IntervalSeconds: 12, Heartbeats: 1,
				Addresses: []string{"a2"}, AgentVersion: "va2", Classes: []inventory.DeviceClass{dc("ssd", 1, 2)}}},
		{"a newer heartbeat takes the state; a class it drops goes unless newer", known, true, hb(7, "a7", dc("ssd", 2, 0), dc("fast", 3, 0)),
			inventory.StorageNode{Name: "n1", FirstSeen: at(1), HeartbeatAt: at(7), IntervalSeconds: 17, Heartbeats: 4,
				Addresses: []string{"a7"}, AgentVersion: "va7", Classes: []inventory.DeviceClass{dc("fast", 3, 7), dc("nvme", 8, 9), dc("ssd", 2, 7)}}},
		{"a late heartbeat is counted and moves the first sighting only", known, true, hb(0, "a0", dc("ssd", 2, 0)),
			inventory.StorageNode{Name: "n1", FirstSeen: at(0), HeartbeatAt: at(5), IntervalSeconds: 15, Heartbeats: 4,
				Addresses: []string{"a5"}, AgentVersion: "va5", Classes: known.Classes}},
		{"a heartbeat at the same time wins", known, true, hb(5, "b5"),
			inventory.StorageNode{Name: "n1", FirstSeen: at(1), HeartbeatAt: at(5), IntervalSeconds: 15, Heartbeats: 4,
				Addresses: []string{"b5"}, AgentVersion: "vb5", Classes: []inventory.DeviceClass{dc("nvme", 8, 9)}}},
		{"a node known from capacity only gets its first heartbeat", inventory.StorageNode{Name: "n1", FirstSeen: at(3),
			Classes: []inventory.DeviceClass{dc("ssd", 5, 3)}}, true, hb(2, "a2", dc("ssd", 1, 0)),
			inventory.StorageNode{Name: "n1", FirstSeen: at(2), HeartbeatAt: at(2), IntervalSeconds: 12, Heartbeats: 1,
				Addresses: []string{"a2"}, AgentVersion: "va2", Classes: []inventory.DeviceClass{dc("ssd", 5, 3)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprintf("%+v", tc.before)
			got := inventory.ApplyHeartbeat(tc.before, tc.found, tc.hb)
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			if fmt.Sprintf("%+v", tc.before) != before {
				t.Fatalf("ApplyHeartbeat changed its input: %+v", tc.before)
			}
		})
	}
}

// TestApplyCapacity: a class report wins over an older one only; a node may start with one.
func TestApplyCapacity(t *testing.T) {
	known := inventory.StorageNode{Name: "n1", FirstSeen: at(2), HeartbeatAt: at(4), Heartbeats: 1, Classes: []inventory.DeviceClass{dc("ssd", 50, 4)}}
	for _, tc := range []struct {
		name   string
		before inventory.StorageNode
		found  bool
		class  inventory.DeviceClass
		at     int
		want   []inventory.DeviceClass
		first  int
	}{
		{"first report of a new node", inventory.StorageNode{}, false, dc("ssd", 60, 0), 0, []inventory.DeviceClass{dc("ssd", 60, 0)}, 0},
		{"older than the class: nothing but the sighting", known, true, dc("ssd", 1, 0), 1, []inventory.DeviceClass{dc("ssd", 50, 4)}, 1},
		{"newer: taken", known, true, dc("ssd", 30, 0), 6, []inventory.DeviceClass{dc("ssd", 30, 6)}, 2},
		{"another class: added in name order", known, true, dc("hdd", 10, 0), 3, []inventory.DeviceClass{dc("hdd", 10, 3), dc("ssd", 50, 4)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := inventory.ApplyCapacity(tc.before, tc.found, "n1", tc.class, at(tc.at))
			if got.Name != "n1" || fmt.Sprint(got.Classes) != fmt.Sprint(tc.want) || !got.FirstSeen.Equal(at(tc.first)) || got.Heartbeats != tc.before.Heartbeats {
				t.Fatalf("got %+v; want classes %v, first seen %v", got, tc.want, at(tc.first))
			}
		})
	}
}

// TestMachineRules: the newest state wins with the earliest sighting; a deleted cluster's
// machines are released unless they changed later; what forgetting takes.
func TestMachineRules(t *testing.T) {
	const (
		ready    = eventsv1.MachineState_MACHINE_STATE_READY
		released = eventsv1.MachineState_MACHINE_STATE_RELEASED
	)
	m := func(state eventsv1.MachineState, first, changed int) inventory.Machine {
		return inventory.Machine{Name: "m1", Cluster: "c1", State: state, Message: fmt.Sprint(changed), FirstSeen: at(first), ChangedAt: at(changed)}
	}
	for _, tc := range []struct {
		name   string
		before inventory.Machine
		found  bool
		event  inventory.Machine
		want   inventory.Machine
	}{
		{"new: first seen when it changed", inventory.Machine{}, false, m(ready, 9, 3), m(ready, 3, 3)},
		{"newer wins, first sighting kept", m(ready, 1, 2), true, m(released, 5, 5), m(released, 1, 5)},
		{"same time wins", m(ready, 1, 2), true, m(released, 2, 2), m(released, 1, 2)},
		{"late: only the sighting", m(released, 2, 5), true, m(ready, 1, 1), m(released, 1, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inventory.ApplyMachine(tc.before, tc.found, tc.event); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	later, earlier := m(ready, 0, 5), m(ready, 0, 1)
	earlier.Name = "m0"
	got := inventory.Release([]inventory.Machine{earlier, later}, at(3))
	if len(got) != 1 || got[0].Name != "m0" || got[0].State != released || !got[0].ChangedAt.Equal(at(3)) {
		t.Fatalf("release at 3s: %+v; want m0 released at 3s, m1 (changed at 5s) left", got)
	}
	f := inventory.Forgetting{Before: at(10)}
	for _, tc := range []struct {
		node inventory.StorageNode
		want bool
	}{
		{inventory.StorageNode{FirstSeen: at(0), HeartbeatAt: at(9)}, true},
		{inventory.StorageNode{FirstSeen: at(0), HeartbeatAt: at(10)}, false},
		{inventory.StorageNode{FirstSeen: at(9)}, true},
		{inventory.StorageNode{FirstSeen: at(0), HeartbeatAt: at(11)}, false},
	} {
		if f.Node(tc.node) != tc.want {
			t.Errorf("forget node %+v: %v", tc.node, !tc.want)
		}
	}
	if !f.Machine(m(released, 0, 9)) || f.Machine(m(released, 0, 10)) || f.Machine(m(ready, 0, 1)) {
		t.Error("forgetting takes the machines released before the cutoff, and only those")
	}
}
