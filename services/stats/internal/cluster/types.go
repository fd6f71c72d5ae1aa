// Package cluster is the storage cluster as the dashboard sees it: what each source (Ceph,
// Kubernetes, the suite's inventory) last reported, the collector that refreshes them in the
// background, and the rules that turn them into the figures the API answers with — the
// summary, the node list and the radar.
package cluster

import (
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Ceph health statuses, as Ceph spells them.
const (
	HealthOK   = "HEALTH_OK"
	HealthWarn = "HEALTH_WARN"
	HealthErr  = "HEALTH_ERR"
)

// Check is an active health check (Ceph's, or one of the inventory's).
type Check struct {
	// Name is the check's code, e.g. OSDMAP_FLAGS.
	Name string
	// Severity is HEALTH_WARN or HEALTH_ERR.
	Severity string
	// Message is the one-line summary, e.g. "noout flag(s) set".
	Message string
	// Muted checks are acknowledged by an operator: listed, but not held against stability.
	Muted bool
	// Details are the check's detail lines (`ceph health detail`), at most MaxCheckDetails.
	Details []string
	// Count is how many things the check counts (OSDs down, daemons crashed); 0 when unknown.
	Count int64
}

// MaxCheckDetails bounds a check's detail lines (Ceph itself stops RECENT_CRASH's at 31).
const MaxCheckDetails = 32

// Origin says which source a Ceph report comes from.
type Origin int

// The origins, numbered as plinth.stats.v1.ClusterSource.
const (
	OriginUnknown Origin = iota
	OriginDashboard
	OriginPrometheus
	OriginRook
	OriginInventory
)

// OSD is one object storage daemon.
type OSD struct {
	ID     int
	Up, In bool
}

// Crash is one daemon's recent crashes, as Ceph's RECENT_CRASH check lists them.
type Crash struct {
	Daemon, Host string
	Count        int
	// Last is the latest crash's time; zero when it could not be read.
	Last time.Time
}

// Usage is raw capacity in bytes.
type Usage struct {
	Used, Available, Total int64
}

// Add is the sum of two capacities.
func (u Usage) Add(o Usage) Usage {
	return Usage{Used: u.Used + o.Used, Available: u.Available + o.Available, Total: u.Total + o.Total}
}

// IO is the cluster's client throughput.
type IO struct {
	ReadBytesPerSec, WriteBytesPerSec, ReadOpsPerSec, WriteOpsPerSec float64
}

// Pool is one storage pool and its replication.
type Pool struct {
	Name string
	// Size is the number of copies (k+m for erasure-coded pools); MinSize the copies needed
	// to serve I/O, 0 when the source does not say.
	Size, MinSize int
	// PGs is the pool's placement group count; ActiveClean how many are active and clean.
	PGs, ActiveClean int
	// StoredBytes are the bytes stored (before replication); Objects the objects.
	StoredBytes, Objects int64
}

// Ceph is what the Ceph source read: the mgr dashboard's health report, the mgr Prometheus
// module's metrics, or — without either — what Rook recorded in its CephCluster's status.
type Ceph struct {
	// Origin is the source that read it.
	Origin Origin
	FSID   string
	Health string
	Checks []Check
	// Crashes are the daemons that crashed recently, the latest first.
	Crashes []Crash

	// Mons are the monitors' names in rank order; Quorum those in quorum.
	Mons, Quorum            []string
	MonCreated, MonModified time.Time

	MgrActive   string
	MgrStandbys []string
	MgrChanged  time.Time

	// Filesystems is the number of CephFS file systems; MDSUp their active ranks; MDSStandby
	// the daemons ready to take over (standby and standby-replay).
	Filesystems, MDSUp, MDSStandby int

	OSDs, OSDsUp, OSDsIn       int
	OSDUpChanged, OSDInChanged time.Time
	// OSDList are the OSDs by id, when the source lists them.
	OSDList []OSD

	Pools []Pool
	// Objects is the number of objects; StoredBytes the bytes stored in them (before
	// replication).
	Objects     int64
	StoredBytes int64
	Usage       Usage
	IO          IO

	// Volumes is the number of RBD images, when VolumesKnown.
	Volumes      int
	VolumesKnown bool

	// RGWDaemons are the running radosgw daemons; RGWHosts the hosts they run on and RGWZones
	// the zones they serve.
	RGWDaemons, RGWHosts, RGWZones int
}

// ActiveCleanPGs is the number of active+clean placement groups over all pools.
func (c *Ceph) ActiveCleanPGs() int {
	n := 0
	for _, p := range c.Pools {
		n += p.ActiveClean
	}
	return n
}

// Status is a resource's or node's state, as the API reports it.
type Status int

// The statuses, numbered as resources.stats.ResourceStatus.
const (
	StatusUnknown Status = iota
	StatusReady
	StatusProgressing
	StatusNotReady
)

// Reliability says how well a resource survives the loss of one of its parts.
type Reliability int

// The scores, numbered as resources.stats.ReliabilityScore and ordered from worst to best
// after Unknown.
const (
	ReliabilityUnknown Reliability = iota
	ReliabilityNone
	ReliabilityDegraded
	ReliabilityOK
)

// Worst is the lower of two known scores; Unknown counts only when both are unknown.
func (r Reliability) Worst(o Reliability) Reliability {
	switch {
	case r == ReliabilityUnknown:
		return o
	case o == ReliabilityUnknown:
		return r
	}
	return min(r, o)
}

// Resource is a Kubernetes object of the storage cluster: a Deployment or a Rook custom
// resource.
type Resource struct {
	APIVersion, Kind, Namespace, Name string
	Status                            Status
	Replicas                          int32
	Reliability                       Reliability
}

// Node is a machine of the storage cluster.
type Node struct {
	Name                   string
	Status                 Status
	Roles                  []string
	InternalIP, ExternalIP string
	// Since is when the node appeared: its creation (Kubernetes) or first event (inventory).
	Since time.Time
}

// SafeText is s made fit for an API answer and a log line: valid UTF-8 (protobuf requires it),
// without NUL, at most max bytes (cut with a marker). Sources pass everything they read from
// outside through it.
func SafeText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	return input.Truncate(s, max)
}
