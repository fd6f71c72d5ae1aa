// Package cluster holds kaas's rules: what a cluster, a node pool and a machine are, which
// requests are valid, which versions a cluster may run and move to, and how a cluster's status
// follows from its machines and the work still to do. It knows neither gRPC nor SQL nor any
// machine provider.
package cluster

import (
	"time"
)

// Status is a cluster's state as clients see it. The numbers are cnct.kaas.api.ClusterStatus's
// and plinth.events.v1.KaasClusterStatus's.
type Status int32

// The cluster statuses.
const (
	StatusUnspecified  Status = 0
	StatusProvisioning Status = 1
	StatusRunning      Status = 2
	StatusReconciling  Status = 3
	StatusStopping     Status = 4
	StatusError        Status = 5
	StatusDegraded     Status = 6
)

var statusNames = map[Status]string{
	StatusUnspecified: "STATUS_UNSPECIFIED", StatusProvisioning: "PROVISIONING", StatusRunning: "RUNNING",
	StatusReconciling: "RECONCILING", StatusStopping: "STOPPING", StatusError: "ERROR", StatusDegraded: "DEGRADED",
}

func (s Status) String() string { return statusNames[s] }

// Role says what a machine is in its cluster; the numbers are plinth.events.v1.MachineRole's.
type Role int32

// The machine roles.
const (
	RoleControlPlane Role = 1
	RoleWorker       Role = 2
)

func (r Role) String() string {
	if r == RoleControlPlane {
		return "control-plane"
	}
	return "worker"
}

// MachineState is a machine's lifecycle in kaas; the numbers are plinth.events.v1.MachineState's.
type MachineState int32

// The machine states.
const (
	MachineProvisioning MachineState = 1 // allocated and being deployed
	MachineReady        MachineState = 2 // deployed and joined to its cluster
	MachineFailed       MachineState = 3 // deployment, bootstrap or upgrade failed
	MachineUpdating     MachineState = 4 // being upgraded
	MachineReleasing    MachineState = 5 // being given back to the provider
	MachineReleased     MachineState = 6 // gone
)

var machineStateNames = map[MachineState]string{
	MachineProvisioning: "provisioning", MachineReady: "ready", MachineFailed: "failed",
	MachineUpdating: "updating", MachineReleasing: "releasing", MachineReleased: "released",
}

func (s MachineState) String() string { return machineStateNames[s] }

// ControlPlanePool is the name of every cluster's control-plane pool. Worker pools may not
// take it.
const ControlPlanePool = "control-plane"

// Label is a Kubernetes label the machines of a pool carry.
type Label struct {
	Name, Value string
}

// Pool is a set of alike machines: the control plane or a worker node pool.
type Pool struct {
	Name         string
	Role         Role
	InstanceType string
	// Count is the desired number of machines.
	Count  int
	Labels []Label
	// Deleting: DeleteNodePool was called; its machines are being released.
	Deleting bool
	// NextOrdinal numbers the pool's next machine; ordinals are never reused.
	NextOrdinal int
}

// Machine is one machine of a cluster, as kaas last saw it at its provider.
type Machine struct {
	ID      int64
	Pool    string
	Name    string // hostname-like, unique in its cluster; also the Kubernetes node name
	Ordinal int
	Role    Role
	State   MachineState
	// Version is the Kubernetes version the machine runs (or is being deployed with).
	Version string
	// ProviderID is the provider's id (MAAS system id, vagrant target id); empty until known.
	ProviderID string
	// ProviderState is the provider's own record of its progress with the machine, kept by
	// kaas between reconciler passes so that a restarted kaas resumes where it was.
	ProviderState  []byte
	Hostname       string
	Addresses      []string
	ProviderStatus string
	Message        string
	// Release marks a machine that must be given back (scale down, pool or cluster deleted).
	Release   bool
	CreatedAt time.Time
}

// Cluster is a cluster's own row: what was asked for and what kaas knows of it.
type Cluster struct {
	ID   int64
	UID  string // distinguishes a cluster from an earlier one of the same name at providers
	Name string
	// Owner created the cluster; its quota counts the cluster's machines.
	Owner Owner
	// Provider names the machine provider ("maas", "vagrant").
	Provider string
	// Version is what the cluster runs; TargetVersion is what it was asked to run. They
	// differ while an upgrade is in progress.
	Version       string
	TargetVersion string
	Status        Status
	StatusMessage string
	Deleting      bool
	// ReadyOnce: every machine was ready at least once; until then the cluster is PROVISIONING.
	ReadyOnce bool
	// Endpoint is the first control-plane machine's API address (host:6443), once known.
	Endpoint string
	// Attempts counts reconciler passes in a row that failed (e.g. the provider was
	// unreachable); LastError is the latest failure.
	Attempts  int
	LastError string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// View is a cluster with its pools and its machines that are not released.
type View struct {
	Cluster
	Pools    []Pool
	Machines []Machine
}

// Pool returns the pool called name.
func (v *View) Pool(name string) (*Pool, bool) {
	for i := range v.Pools {
		if v.Pools[i].Name == name {
			return &v.Pools[i], true
		}
	}
	return nil, false
}

// MachinesOf returns the machines of pool name that are not marked for release, oldest first.
func (v *View) MachinesOf(pool string) []Machine {
	var out []Machine
	for _, m := range v.Machines {
		if m.Pool == pool && !m.Release {
			out = append(out, m)
		}
	}
	return out
}

// StatusEntry is one change of a cluster's status, for its timeline.
type StatusEntry struct {
	Time    time.Time
	Status  Status
	Message string
	// Actor is the username whose request caused it; empty for kaas's own work.
	Actor string
}
