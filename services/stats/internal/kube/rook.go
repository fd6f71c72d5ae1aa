package kube

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// The Rook kinds GetClusterResources lists, in its order.
const (
	KindCephCluster     = "CephCluster"
	KindCephBlockPool   = "CephBlockPool"
	KindCephFilesystem  = "CephFilesystem"
	KindCephObjectStore = "CephObjectStore"
)

// rookAPIVersion is ceph.rook.io's served version.
const rookAPIVersion = "ceph.rook.io/v1"

// maxMessage bounds the health messages taken from Rook's status.
const maxMessage = 1 << 10

// Decoded is what one Rook custom resource contributes: its line in GetClusterResources and
// the redundancy it asks for.
type Decoded struct {
	Resource cluster.Resource
	// Pools are the pools it defines; Mons, MDS and Gateways the daemons it asks for.
	Pools               []cluster.Pool
	Mons, MDS, Gateways int
	// Ceph is what Rook recorded of the cluster (CephCluster only; nil before Rook's first
	// health check).
	Ceph *cluster.Ceph
}

// object is what every resource has.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// phaseStatus is the status of pools, file systems and object stores.
type phaseStatus struct {
	Phase string `json:"phase"`
}

// poolSpec is Rook's PoolSpec.
type poolSpec struct {
	Name       string `json:"name"`
	Replicated struct {
		Size int `json:"size"`
	} `json:"replicated"`
	ErasureCoded struct {
		DataChunks   int `json:"dataChunks"`
		CodingChunks int `json:"codingChunks"`
	} `json:"erasureCoded"`
	Parameters map[string]string `json:"parameters"`
}

// pool is the spec as a pool: Ceph's default min_size (size − size/2 for replicas, k+1 for
// erasure coding) unless the spec's parameters set one.
func (p poolSpec) pool(name string) cluster.Pool {
	const most = 1 << 16 // no pool has more copies or chunks; bounds hostile specs
	out := cluster.Pool{Name: name}
	size, k, m := min(p.Replicated.Size, most), min(p.ErasureCoded.DataChunks, most), min(max(p.ErasureCoded.CodingChunks, 0), most)
	switch {
	case size > 0:
		out.Size, out.MinSize = size, size-size/2
	case k > 0:
		out.Size, out.MinSize = k+m, k+1
	}
	if n, err := strconv.Atoi(p.Parameters["min_size"]); err == nil && n > 0 && n <= most {
		out.MinSize = n
	}
	return out
}

// Decode reads one Rook custom resource of kind from its JSON.
func Decode(kind string, data []byte) (Decoded, error) {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return Decoded{}, fmt.Errorf("%s: %w", kind, err)
	}
	if err := input.Required("metadata.name", o.Metadata.Name, input.MaxName); err != nil {
		return Decoded{}, fmt.Errorf("%s: %w", kind, err)
	}
	d := Decoded{Resource: cluster.Resource{APIVersion: o.APIVersion, Kind: kind,
		Namespace: cluster.SafeText(o.Metadata.Namespace, input.MaxName), Name: cluster.SafeText(o.Metadata.Name, input.MaxName)}}
	if d.Resource.APIVersion == "" || len(d.Resource.APIVersion) > input.MaxName {
		d.Resource.APIVersion = rookAPIVersion
	}
	var err error
	switch kind {
	case KindCephCluster:
		err = decodeCephCluster(data, &d)
	case KindCephBlockPool:
		err = decodeBlockPool(data, &d)
	case KindCephFilesystem:
		err = decodeFilesystem(data, &d)
	case KindCephObjectStore:
		err = decodeObjectStore(data, &d)
	default:
		err = fmt.Errorf("unknown kind %s", input.Quote(kind))
	}
	if err != nil {
		return Decoded{}, fmt.Errorf("%s %s: %w", kind, input.Quote(o.Metadata.Name), err)
	}
	return d, nil
}

// decodeCephCluster maps the status as Koor's data-control-center did — Created or Connected:
// READY; Creating, Connecting or Updating: NOT_READY; nothing before Rook's first health check:
// UNKNOWN — and, where upstream said UNKNOWN, Error as NOT_READY and, for Rook releases that
// only set the phase, Ready/Connected as READY and Progressing/Connecting/Failure as
// NOT_READY. Replicas are the monitors asked for.
func decodeCephCluster(data []byte, d *Decoded) error {
	var cc struct {
		Spec struct {
			Mon struct {
				Count int `json:"count"`
			} `json:"mon"`
		} `json:"spec"`
		Status *struct {
			State string `json:"state"`
			Phase string `json:"phase"`
			Ceph  *struct {
				Health   string `json:"health"`
				FSID     string `json:"fsid"`
				Details  map[string]struct{ Message, Severity string }
				Capacity struct {
					Available int64 `json:"bytesAvailable"`
					Total     int64 `json:"bytesTotal"`
					Used      int64 `json:"bytesUsed"`
				} `json:"capacity"`
			} `json:"ceph"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		return err
	}
	d.Mons = max(cc.Spec.Mon.Count, 0)
	d.Resource.Replicas = int32(min(d.Mons, 1<<20))
	d.Resource.Reliability = cluster.MonReliability(d.Mons)
	if cc.Status == nil || cc.Status.Ceph == nil {
		return nil
	}
	st := cc.Status
	switch {
	case st.State == "Created" || st.State == "Connected" || (st.State == "" && (st.Phase == "Ready" || st.Phase == "Connected")):
		d.Resource.Status = cluster.StatusReady
	case st.State == "Creating" || st.State == "Connecting" || st.State == "Updating" || st.State == "Error" ||
		(st.State == "" && (st.Phase == "Progressing" || st.Phase == "Connecting" || st.Phase == "Failure")):
		d.Resource.Status = cluster.StatusNotReady
	}
	c := &cluster.Ceph{Origin: cluster.OriginRook, FSID: cluster.SafeText(st.Ceph.FSID, input.MaxName), Health: cluster.SafeText(st.Ceph.Health, input.MaxName),
		Usage: cluster.Usage{Used: max(st.Ceph.Capacity.Used, 0), Available: max(st.Ceph.Capacity.Available, 0), Total: max(st.Ceph.Capacity.Total, 0)}}
	for name, m := range st.Ceph.Details {
		c.Checks = append(c.Checks, cluster.Check{Name: cluster.SafeText(name, input.MaxName),
			Severity: cluster.SafeText(m.Severity, input.MaxName), Message: cluster.SafeText(m.Message, maxMessage)})
	}
	sort.Slice(c.Checks, func(i, j int) bool { return c.Checks[i].Name < c.Checks[j].Name })
	d.Ceph = c
	return nil
}

// phaseStatusOf maps a pool's, file system's or object store's phase as upstream did: no
// status yet UNKNOWN, Ready or Progressing READY, anything else NOT_READY.
func phaseStatusOf(s *phaseStatus) cluster.Status {
	switch {
	case s == nil:
		return cluster.StatusUnknown
	case s.Phase == "Ready" || s.Phase == "Progressing":
		return cluster.StatusReady
	}
	return cluster.StatusNotReady
}

// decodeBlockPool: replicas are the pool's copies (chunks, erasure-coded).
func decodeBlockPool(data []byte, d *Decoded) error {
	var bp struct {
		Spec   poolSpec     `json:"spec"`
		Status *phaseStatus `json:"status"`
	}
	if err := json.Unmarshal(data, &bp); err != nil {
		return err
	}
	name := d.Resource.Name
	if bp.Spec.Name != "" { // spec.name overrides the pool's name in Ceph (e.g. ".mgr")
		name = cluster.SafeText(bp.Spec.Name, input.MaxName)
	}
	p := bp.Spec.pool(name)
	d.Pools = []cluster.Pool{p}
	d.Resource.Status = phaseStatusOf(bp.Status)
	d.Resource.Replicas = int32(min(p.Size, 1<<20))
	d.Resource.Reliability = cluster.PoolReliability(p)
	return nil
}

// decodeFilesystem: replicas are its MDS daemons — the active ones, doubled only when each has
// a standby (upstream doubled them always); reliability is the worst of the MDS and the pools.
func decodeFilesystem(data []byte, d *Decoded) error {
	var fs struct {
		Spec struct {
			MetadataPool   poolSpec   `json:"metadataPool"`
			DataPools      []poolSpec `json:"dataPools"`
			MetadataServer struct {
				ActiveCount   int  `json:"activeCount"`
				ActiveStandby bool `json:"activeStandby"`
			} `json:"metadataServer"`
		} `json:"spec"`
		Status *phaseStatus `json:"status"`
	}
	if err := json.Unmarshal(data, &fs); err != nil {
		return err
	}
	active := min(max(fs.Spec.MetadataServer.ActiveCount, 0), 1<<16)
	d.MDS = active
	if fs.Spec.MetadataServer.ActiveStandby {
		d.MDS = 2 * active
	}
	d.Pools = append(d.Pools, fs.Spec.MetadataPool.pool(d.Resource.Name+"-metadata"))
	for i, p := range fs.Spec.DataPools {
		name := p.Name
		if name == "" {
			name = "data" + strconv.Itoa(i)
		}
		d.Pools = append(d.Pools, p.pool(d.Resource.Name+"-"+cluster.SafeText(name, input.MaxName)))
	}
	d.daemonsAndPools(fs.Status, d.MDS)
	return nil
}

// daemonsAndPools completes a file system's or object store's line: its phase, its daemons as
// replicas, and the worst reliability of those daemons and its pools.
func (d *Decoded) daemonsAndPools(status *phaseStatus, daemons int) {
	rel := cluster.DaemonReliability(daemons)
	for _, p := range d.Pools {
		rel = rel.Worst(cluster.PoolReliability(p))
	}
	d.Resource.Status = phaseStatusOf(status)
	d.Resource.Replicas = int32(daemons)
	d.Resource.Reliability = rel
}

// decodeObjectStore: replicas are its gateways; reliability is the worst of the gateways and
// the pools.
func decodeObjectStore(data []byte, d *Decoded) error {
	var store struct {
		Spec struct {
			MetadataPool poolSpec `json:"metadataPool"`
			DataPool     poolSpec `json:"dataPool"`
			Gateway      struct {
				Instances int `json:"instances"`
			} `json:"gateway"`
		} `json:"spec"`
		Status *phaseStatus `json:"status"`
	}
	if err := json.Unmarshal(data, &store); err != nil {
		return err
	}
	d.Gateways = min(max(store.Spec.Gateway.Instances, 0), 1<<16)
	d.Pools = []cluster.Pool{store.Spec.MetadataPool.pool(d.Resource.Name + "-metadata"), store.Spec.DataPool.pool(d.Resource.Name + "-data")}
	d.daemonsAndPools(store.Status, d.Gateways)
	return nil
}
