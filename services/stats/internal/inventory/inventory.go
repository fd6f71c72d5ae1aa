// Package inventory is the suite's own node inventory: lvmd-agent's storage nodes (heartbeats
// and capacity) and kaas's machines, built from their events and kept in schema stats, and the
// rules that turn it into nodes, capacity and health for the dashboard; and, from the same
// streams, the activity (who changed which cluster or volume) for the audit trail.
package inventory

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// StorageNode is a node an lvmd-agent runs on.
type StorageNode struct {
	Name string
	// FirstSeen is the time of its earliest event.
	FirstSeen time.Time
	// HeartbeatAt is the time of its newest heartbeat; zero before the first.
	HeartbeatAt time.Time
	// IntervalSeconds is how often the agent says it sends heartbeats.
	IntervalSeconds int
	// Heartbeats counts the heartbeats processed: each exactly once.
	Heartbeats   int64
	Addresses    []string
	AgentVersion string
	Classes      []DeviceClass
}

// DeviceClass is one of a node's device classes and its volume group's space.
type DeviceClass struct {
	Name, VolumeGroup    string
	Default              bool
	SizeBytes, FreeBytes int64
	Volumes              int
	// ObservedAt is the time of the report the class is from: an older one never replaces it.
	ObservedAt time.Time
}

// Machine is a machine of a kaas cluster.
type Machine struct {
	Name, Cluster, Pool string
	Role                eventsv1.MachineRole
	State               eventsv1.MachineState
	Addresses           []string
	Provider            string
	ProviderID          string
	ProviderStatus      string
	Message             string
	// FirstSeen is the time of its earliest event; ChangedAt of the one its state is from.
	FirstSeen, ChangedAt time.Time
}

// Heartbeat is a NodeHeartbeat as the store records it.
type Heartbeat struct {
	Node            string
	At              time.Time
	IntervalSeconds int
	Addresses       []string
	AgentVersion    string
	Classes         []DeviceClass
}

// Store keeps the inventory and writes what the rules decide (record.go): each Update method
// runs in the event's transaction (tx), so an event changes the inventory exactly once, holds
// what it reads until tx ends, passes it to change and writes exactly what change returns.
type Store interface {
	// UpdateNode passes storage node name (found false and the zero StorageNode when none is
	// recorded) to change and writes the node change returns, its device classes included.
	UpdateNode(ctx context.Context, tx pgx.Tx, name string, change func(before StorageNode, found bool) StorageNode) error
	// UpdateMachine passes machine name, released or not (found false and the zero Machine
	// when none is recorded), to change and writes the machine change returns.
	UpdateMachine(ctx context.Context, tx pgx.Tx, name string, change func(before Machine, found bool) Machine) error
	// UpdateClusterMachines passes cluster's machines, released ones included, to change and
	// writes the machines change returns.
	UpdateClusterMachines(ctx context.Context, tx pgx.Tx, cluster string, change func(before []Machine) []Machine) error
	StorageNodes(ctx context.Context) ([]StorageNode, error)
	// Machines are the machines not released.
	Machines(ctx context.Context) ([]Machine, error)
	// Forget deletes the storage nodes (read without their device classes) and machines f
	// says are forgotten, and returns how many rows it deleted.
	Forget(ctx context.Context, f Forgetting) (int64, error)
	// RecordActivity keeps a change for the audit trail and drops the entries more than keep
	// older.
	RecordActivity(ctx context.Context, tx pgx.Tx, a Activity, keep int) error
}
