package inventory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// MaxActivity is how many activity entries the audit trail keeps: the oldest beyond it are
// dropped.
const MaxActivity = 10_000

// The rules below decide what an event changes; the Store writes what they return. Events
// may arrive late (a redelivery after a newer one), so each keeps the newest state and the
// earliest sighting.

// ApplyHeartbeat is the storage node after hb: the heartbeat counted; the earliest sighting
// kept; when hb is the node's newest heartbeat, its interval, addresses, version and device
// classes taken (a class it no longer lists dropped, unless a newer capacity report keeps
// it), each class only over an older report. found is false for a node not recorded yet.
func ApplyHeartbeat(before StorageNode, found bool, hb Heartbeat) StorageNode {
	n := before
	if !found {
		n = StorageNode{Name: hb.Node, FirstSeen: hb.At}
	}
	n.Heartbeats++
	n.FirstSeen = earliest(n.FirstSeen, hb.At)
	if !n.HeartbeatAt.IsZero() && n.HeartbeatAt.After(hb.At) {
		return n // a late heartbeat: counted, its state older than the node's
	}
	n.HeartbeatAt, n.IntervalSeconds, n.AgentVersion = hb.At, hb.IntervalSeconds, hb.AgentVersion
	n.Addresses = slices.Clone(hb.Addresses)
	n.Classes = slices.DeleteFunc(slices.Clone(n.Classes), func(c DeviceClass) bool {
		return !c.ObservedAt.After(hb.At) && !slices.ContainsFunc(hb.Classes, func(l DeviceClass) bool { return l.Name == c.Name })
	})
	for _, c := range hb.Classes {
		c.ObservedAt = hb.At
		n.Classes = withClass(n.Classes, c)
	}
	return n
}

// ApplyCapacity is the storage node after a report of one device class's space at at: the
// class taken unless a newer report of it is recorded; a node not recorded yet (found false)
// is recorded without a heartbeat.
func ApplyCapacity(before StorageNode, found bool, node string, class DeviceClass, at time.Time) StorageNode {
	n := before
	if !found {
		n = StorageNode{Name: node, FirstSeen: at}
	}
	n.FirstSeen = earliest(n.FirstSeen, at)
	class.ObservedAt = at
	n.Classes = withClass(slices.Clone(n.Classes), class)
	return n
}

// withClass is classes with c in place of its name's entry, unless that entry is newer;
// sorted by name.
func withClass(classes []DeviceClass, c DeviceClass) []DeviceClass {
	i := slices.IndexFunc(classes, func(o DeviceClass) bool { return o.Name == c.Name })
	switch {
	case i < 0:
		classes = append(classes, c)
	case !classes[i].ObservedAt.After(c.ObservedAt):
		classes[i] = c
	}
	slices.SortFunc(classes, func(a, b DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	return classes
}

// ApplyMachine is the machine after the state m reports: m's state unless a newer one is
// recorded, and the earliest sighting either way. found is false for a machine not
// recorded yet.
func ApplyMachine(before Machine, found bool, m Machine) Machine {
	if !found {
		m.FirstSeen = m.ChangedAt
		return m
	}
	after := before
	if !before.ChangedAt.After(m.ChangedAt) {
		after = m
	}
	after.FirstSeen = earliest(before.FirstSeen, m.ChangedAt)
	return after
}

// Release is what a cluster deleted at at leaves of its machines: each released at at,
// unless it changed later (its state is newer than the deletion). Only the machines that
// change are returned.
func Release(machines []Machine, at time.Time) []Machine {
	var out []Machine
	for _, m := range machines {
		if m.ChangedAt.After(at) {
			continue
		}
		m.State, m.ChangedAt = eventsv1.MachineState_MACHINE_STATE_RELEASED, at
		out = append(out, m)
	}
	return out
}

// Forgetting says what the inventory forgets: the storage nodes silent since Before (their
// newest heartbeat, or their first event without one, is older) and the machines released
// before it.
type Forgetting struct{ Before time.Time }

// Node reports whether n is forgotten.
func (f Forgetting) Node(n StorageNode) bool {
	last := n.HeartbeatAt
	if last.IsZero() {
		last = n.FirstSeen
	}
	return last.Before(f.Before)
}

// Machine reports whether m is forgotten.
func (f Forgetting) Machine(m Machine) bool {
	return m.State == eventsv1.MachineState_MACHINE_STATE_RELEASED && m.ChangedAt.Before(f.Before)
}

// earliest is the earlier of a (zero: none) and b.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// RecordHeartbeat records hb in tx: the node as ApplyHeartbeat leaves it.
func RecordHeartbeat(ctx context.Context, s Store, tx pgx.Tx, hb Heartbeat) error {
	return s.UpdateNode(ctx, tx, hb.Node, func(before StorageNode, found bool) StorageNode {
		return ApplyHeartbeat(before, found, hb)
	})
}

// RecordCapacity records a device class's space reported at at in tx (see ApplyCapacity).
func RecordCapacity(ctx context.Context, s Store, tx pgx.Tx, node string, class DeviceClass, at time.Time) error {
	return s.UpdateNode(ctx, tx, node, func(before StorageNode, found bool) StorageNode {
		return ApplyCapacity(before, found, node, class, at)
	})
}

// RecordMachine records a machine's reported state in tx (see ApplyMachine).
func RecordMachine(ctx context.Context, s Store, tx pgx.Tx, m Machine) error {
	return s.UpdateMachine(ctx, tx, m.Name, func(before Machine, found bool) Machine { return ApplyMachine(before, found, m) })
}

// ReleaseMachines records in tx that cluster was deleted at at (see Release).
func ReleaseMachines(ctx context.Context, s Store, tx pgx.Tx, cluster string, at time.Time) error {
	return s.UpdateClusterMachines(ctx, tx, cluster, func(before []Machine) []Machine { return Release(before, at) })
}
