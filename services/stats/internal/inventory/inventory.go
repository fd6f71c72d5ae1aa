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

// Store keeps the inventory. The Record methods run in the event's transaction (tx), so an
// event changes the inventory exactly once; each keeps the newest state when events arrive
// out of order (a redelivery after a newer event).
type Store interface {
	RecordHeartbeat(ctx context.Context, tx pgx.Tx, hb Heartbeat) error
	RecordCapacity(ctx context.Context, tx pgx.Tx, node string, class DeviceClass, at time.Time) error
	RecordMachine(ctx context.Context, tx pgx.Tx, m Machine) error
	// ReleaseMachines marks every machine of a deleted cluster released.
	ReleaseMachines(ctx context.Context, tx pgx.Tx, cluster string, at time.Time) error
	StorageNodes(ctx context.Context) ([]StorageNode, error)
	// Machines are the machines not released.
	Machines(ctx context.Context) ([]Machine, error)
	// Forget deletes storage nodes silent since before and machines released before it.
	Forget(ctx context.Context, before time.Time) (int64, error)
	// RecordActivity keeps a change for the audit trail, dropping the oldest beyond a bound.
	RecordActivity(ctx context.Context, tx pgx.Tx, a Activity) error
}
