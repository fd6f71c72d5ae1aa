package cluster

import (
	"errors"
	"strings"
	"time"
)

// View is one consistent picture of the cluster, composed from every source's latest report.
// The API answers from the newest View; it is never modified once published.
type View struct {
	// At is when it was composed.
	At time.Time
	// Ceph, Kube and Inventory are the sources' latest reports; nil when a source is not
	// configured or has not answered yet.
	Ceph      *Ceph
	Kube      *Kube
	Inventory *Inventory
	// Sources say how each configured source is doing.
	Sources []SourceState

	// Summary is the cluster's state as ClusterStats reports it: Ceph's (from the Ceph
	// source, else from Rook's CephCluster status, else derived from the inventory) with the
	// inventory's LVM capacity and volumes added.
	Summary Ceph
	// Nodes are the storage cluster's nodes: from Kubernetes when it answered, else the
	// inventory's.
	Nodes []Node
	// Changes counts changes of state within the stability window.
	Changes int
	Radar   Radar
	// Redundancy is what the radar's reliability and the recommendations judge: the Ceph
	// source's pools and daemons, else what the Rook resources ask for.
	Redundancy Redundancy
}

// compose builds a View from the sources' reports. observe, when set, records the state in
// the history and returns the number of changes within the stability window.
func compose(at time.Time, ceph *Ceph, kube *Kube, inv *Inventory, sources []SourceState, observe func(Sample) int) *View {
	v := &View{At: at, Ceph: ceph, Kube: kube, Inventory: inv, Sources: sources}
	base := ceph
	if base == nil && kube != nil {
		base = kube.RookCeph
	}
	var red Redundancy
	switch {
	case ceph != nil:
		red = ceph.Redundancy()
	case kube != nil:
		red = kube.Redundancy
	}
	switch {
	case kube != nil:
		v.Nodes = kube.Nodes
	case inv != nil:
		v.Nodes = inv.Nodes
	}
	v.Summary = summarize(base, inv)
	if observe != nil {
		v.Changes = observe(v.sample())
	}
	v.Radar = Radar{
		ClusterHealth:     HealthScore(v.Summary.Health),
		NodesHealth:       NodesScore(v.Nodes),
		CapacityAvailable: CapacityScore(v.Summary.Usage),
		Stability:         StabilityScore(v.Summary.Checks, v.Changes),
		Reliability:       ReliabilityScore(red),
	}
	v.Redundancy = red
	return v
}

// summarize is base (which may be nil) plus the inventory's capacity and volumes. Without any
// Ceph report the inventory speaks for the cluster's health: HEALTH_OK when every node is
// fine, HEALTH_WARN with a check per stale node or failed machine (or when no node has
// reported at all), HEALTH_ERR when no node is ready.
func summarize(base *Ceph, inv *Inventory) Ceph {
	var s Ceph
	if base != nil {
		s = *base
	}
	if inv == nil {
		return s
	}
	s.Usage = s.Usage.Add(inv.Capacity)
	if inv.Volumes > 0 {
		s.Volumes += inv.Volumes
		s.VolumesKnown = true
	}
	if base != nil {
		return s
	}
	s.Origin = OriginInventory
	s.Checks = inv.Problems
	ready := 0
	for _, n := range inv.Nodes {
		if n.Status == StatusReady {
			ready++
		}
	}
	switch {
	case len(inv.Nodes) == 0:
		s.Health = HealthWarn
		s.Checks = []Check{{Name: "NO_NODES", Severity: HealthWarn, Message: "no storage node or machine has reported yet"}}
	case ready == 0:
		s.Health = HealthErr
	case len(inv.Problems) > 0:
		s.Health = HealthWarn
	default:
		s.Health = HealthOK
	}
	return s
}

// SourceState is how one source is doing.
type SourceState struct {
	// Name is "ceph", "kubernetes" or "inventory".
	Name string
	// At is the time of the latest successful refresh; zero before the first.
	At time.Time
	// Err is the latest refresh's error, nil when it succeeded; FailingSince is when the
	// current run of failures began and Failures how long it is.
	Err          error
	FailingSince time.Time
	Failures     int
}

// String is the source's state in one line, for /readyz and logs.
func (s SourceState) String() string {
	switch {
	case s.Err == nil && s.At.IsZero():
		return s.Name + ": waiting for the first refresh"
	case s.Err == nil:
		return s.Name + ": ok, refreshed " + s.At.UTC().Format(time.RFC3339)
	case s.At.IsZero():
		return s.Name + ": failing since " + s.FailingSince.UTC().Format(time.RFC3339) + ", never answered: " + s.Err.Error()
	}
	return s.Name + ": failing since " + s.FailingSince.UTC().Format(time.RFC3339) +
		", serving the report of " + s.At.UTC().Format(time.RFC3339) + ": " + s.Err.Error()
}

// ErrNoData is returned while no configured source has ever answered.
var ErrNoData = errors.New("no data source has answered yet")

// NoDataError is ErrNoData naming the sources, without their errors (those may name internal
// addresses; the service logs them).
type NoDataError struct{ Sources []SourceState }

func (e *NoDataError) Error() string {
	names := make([]string, len(e.Sources))
	for i, s := range e.Sources {
		names[i] = s.Name
		if s.Err != nil {
			names[i] += " (failing)"
		}
	}
	return ErrNoData.Error() + ": " + strings.Join(names, ", ")
}

func (e *NoDataError) Unwrap() error { return ErrNoData }
