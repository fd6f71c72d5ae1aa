package ceph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// ErrNotCephMetrics says the metrics are not the mgr prometheus module's.
var ErrNotCephMetrics = errors.New("not a Ceph mgr prometheus endpoint (no ceph_health_status)")

// Prometheus reads the mgr prometheus module.
type Prometheus struct {
	url    string
	client *http.Client
	mu     sync.Mutex
	prev   Counters
	prevAt time.Time
}

// ReadCeph scrapes the module. The I/O rates are the counters' growth since the previous
// scrape (0 on the first, and after a counter reset).
func (p *Prometheus) ReadCeph(ctx context.Context) (*cluster.Ceph, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError("GET metrics", resp, body)
	}
	ms, err := ParseMetrics(body)
	if err != nil {
		return nil, err
	}
	c, now, err := FromMetrics(ms)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if secs := at.Sub(p.prevAt).Seconds(); !p.prevAt.IsZero() && secs > 0 {
		c.IO = cluster.IO{ReadOpsPerSec: rate(p.prev.ReadOps, now.ReadOps, secs), WriteOpsPerSec: rate(p.prev.WriteOps, now.WriteOps, secs),
			ReadBytesPerSec: rate(p.prev.ReadBytes, now.ReadBytes, secs), WriteBytesPerSec: rate(p.prev.WriteBytes, now.WriteBytes, secs)}
	}
	p.prev, p.prevAt = now, at
	return c, nil
}

// rate is a counter's growth per second; a counter that went down was reset: 0.
func rate(before, after, secs float64) float64 {
	if after < before {
		return 0
	}
	return (after - before) / secs
}

// Counters are the cumulative client I/O counters of one scrape; two scrapes make the rates.
type Counters struct {
	ReadOps, WriteOps, ReadBytes, WriteBytes float64
}

// FromMetrics maps the prometheus module's metrics to a Ceph report. What the module does not
// export is left empty: the fsid, the monitors' and managers' change times, the check messages
// (a check shows as its name and severity) and the pools' min_size. I/O rates need two
// scrapes: the caller computes them from the Counters.
func FromMetrics(ms []Metric) (*cluster.Ceph, Counters, error) {
	by := map[string][]Metric{}
	for _, m := range ms {
		by[m.Name] = append(by[m.Name], m)
	}
	status, ok := by["ceph_health_status"]
	if !ok {
		return nil, Counters{}, ErrNotCephMetrics
	}
	c := &cluster.Ceph{Origin: cluster.OriginPrometheus, Health: [...]string{cluster.HealthOK, cluster.HealthWarn, cluster.HealthErr}[clampIndex(status[0].Value, 2)]}
	for _, m := range by["ceph_health_detail"] {
		if m.Value == 1 {
			name := text(m.Labels["name"], maxName)
			c.Checks = append(c.Checks, cluster.Check{Name: name, Severity: text(m.Labels["severity"], maxName), Message: name})
		}
	}
	sort.Slice(c.Checks, func(i, j int) bool { return c.Checks[i].Name < c.Checks[j].Name })
	c.Mons, c.Quorum = monsFromMetrics(by)
	for _, m := range by["ceph_mgr_status"] {
		name := daemonID(m)
		if m.Value == 1 {
			c.MgrActive = name
		} else {
			c.MgrStandbys = append(c.MgrStandbys, name)
		}
	}
	sort.Strings(c.MgrStandbys)
	c.Filesystems = len(by["ceph_fs_metadata"])
	for _, m := range by["ceph_mds_metadata"] {
		if rank, err := strconv.Atoi(m.Labels["rank"]); err == nil && rank >= 0 {
			c.MDSUp++
		} else {
			c.MDSStandby++
		}
	}
	c.OSDs = len(by["ceph_osd_up"])
	c.OSDsUp, c.OSDsIn = countOnes(by["ceph_osd_up"]), countOnes(by["ceph_osd_in"])
	c.OSDList = osdsFromMetrics(by)
	c.Pools = poolsFromMetrics(by)
	c.Objects = int64(clampIndex(sum(by["ceph_pool_objects"]), 1<<62))
	c.StoredBytes = int64(clampIndex(sum(by["ceph_pool_stored"]), 1<<62))
	total, used := sum(by["ceph_cluster_total_bytes"]), sum(by["ceph_cluster_total_used_bytes"])
	c.Usage = cluster.Usage{Total: int64(clampIndex(total, 1<<62)), Used: int64(clampIndex(used, 1<<62))}
	c.Usage.Available = max(c.Usage.Total-c.Usage.Used, 0)
	hosts := map[string]bool{}
	for _, m := range by["ceph_rgw_metadata"] {
		c.RGWDaemons++
		hosts[m.Labels["hostname"]] = true
	}
	// Every gateway serves one zone; which ones the metrics do not say: at least one.
	c.RGWHosts, c.RGWZones = len(hosts), min(c.RGWDaemons, 1)
	if images := distinctImages(by["ceph_rbd_write_ops"]); images > 0 {
		c.Volumes, c.VolumesKnown = images, true
	}
	return c, Counters{ReadOps: sum(by["ceph_pool_rd"]), WriteOps: sum(by["ceph_pool_wr"]),
		ReadBytes: sum(by["ceph_pool_rd_bytes"]), WriteBytes: sum(by["ceph_pool_wr_bytes"])}, nil
}

// monsFromMetrics: the monitors by rank, and those whose quorum status is 1.
func monsFromMetrics(by map[string][]Metric) (all, quorum []string) {
	meta := by["ceph_mon_metadata"]
	sort.SliceStable(meta, func(i, j int) bool {
		ri, _ := strconv.Atoi(meta[i].Labels["rank"])
		rj, _ := strconv.Atoi(meta[j].Labels["rank"])
		return ri < rj
	})
	in := map[string]bool{}
	for _, m := range by["ceph_mon_quorum_status"] {
		in[daemonID(m)] = m.Value == 1
	}
	for _, m := range meta {
		name := daemonID(m)
		all = append(all, name)
		if in[name] {
			quorum = append(quorum, name)
		}
	}
	return all, quorum
}

// poolsFromMetrics: each pool with its size from the description ("replica:3", "ec:4+2") and
// its PGs; active+clean is the lesser of the active and the clean PG counts, which the module
// exports separately.
func poolsFromMetrics(by map[string][]Metric) []cluster.Pool {
	perPool := func(name string) map[string]float64 {
		out := map[string]float64{}
		for _, m := range by[name] {
			out[m.Labels["pool_id"]] += m.Value
		}
		return out
	}
	total, active, clean := perPool("ceph_pg_total"), perPool("ceph_pg_active"), perPool("ceph_pg_clean")
	stored, objects := perPool("ceph_pool_stored"), perPool("ceph_pool_objects")
	var pools []cluster.Pool
	for _, m := range by["ceph_pool_metadata"] {
		id := m.Labels["pool_id"]
		p := cluster.Pool{Name: text(m.Labels["name"], maxName), Size: poolSize(m.Labels["description"]),
			PGs: clampIndex(total[id], 1<<30), ActiveClean: clampIndex(min(active[id], clean[id]), 1<<30),
			StoredBytes: int64(clampIndex(stored[id], 1<<62)), Objects: int64(clampIndex(objects[id], 1<<62))}
		pools = append(pools, p)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	return pools
}

// poolSize reads "replica:3" (3 copies) or "ec:4+2" (6 chunks).
func poolSize(desc string) int {
	kind, n, _ := strings.Cut(desc, ":")
	switch kind {
	case "replica":
		size, _ := strconv.Atoi(n)
		return max(size, 0)
	case "ec":
		k, m, _ := strings.Cut(n, "+")
		ki, _ := strconv.Atoi(k)
		mi, _ := strconv.Atoi(m)
		return max(ki, 0) + max(mi, 0)
	}
	return 0
}

// daemonID is the id in a ceph_daemon label: "a" for "mon.a".
func daemonID(m Metric) string {
	d := m.Labels["ceph_daemon"]
	if _, id, ok := strings.Cut(d, "."); ok {
		d = id
	}
	return text(d, maxName)
}

func countOnes(ms []Metric) int {
	n := 0
	for _, m := range ms {
		if m.Value == 1 {
			n++
		}
	}
	return n
}

func sum(ms []Metric) float64 {
	var s float64
	for _, m := range ms {
		if m.Value == m.Value { // not NaN
			s += m.Value
		}
	}
	return s
}

// distinctImages counts the RBD images the module reports per-image metrics for (only when
// rbd_stats_pools is configured).
func distinctImages(ms []Metric) int {
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Labels["pool"]+"/"+m.Labels["namespace"]+"/"+m.Labels["image"]] = true
	}
	return len(seen)
}

// clampIndex is v as an int in [0, hi]; NaN is 0.
func clampIndex(v float64, hi int) int {
	if !(v > 0) {
		return 0
	}
	if v >= float64(hi) {
		return hi
	}
	return int(v)
}

// osdsFromMetrics lists the OSDs by id from ceph_osd_up and ceph_osd_in (labelled
// ceph_daemon="osd.<id>").
func osdsFromMetrics(by map[string][]Metric) []cluster.OSD {
	in := map[string]bool{}
	for _, m := range by["ceph_osd_in"] {
		in[m.Labels["ceph_daemon"]] = m.Value == 1
	}
	var out []cluster.OSD
	for _, m := range by["ceph_osd_up"] {
		id, err := strconv.Atoi(strings.TrimPrefix(m.Labels["ceph_daemon"], "osd."))
		if err != nil || id < 0 {
			continue
		}
		out = append(out, cluster.OSD{ID: id, Up: m.Value == 1, In: in[m.Labels["ceph_daemon"]]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
