// Package ceph reads a Ceph cluster's state from the mgr: the dashboard's REST API (GET
// /api/health/full, what Koor's data-control-center reads) or, for clusters without the
// dashboard, the prometheus module's metrics.
package ceph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// healthFull is the part of the dashboard's /api/health/full report stats reads. Every shape a
// supported release emits decodes into it (see the fields' types).
type healthFull struct {
	Health struct {
		Status string `json:"status"`
		// Checks are a list (the dashboard) or a map keyed by check name (`ceph status`).
		Checks json.RawMessage `json:"checks"`
	} `json:"health"`
	MonStatus struct {
		Quorum      []number `json:"quorum"`
		QuorumNames []string `json:"quorum_names"`
		Monmap      struct {
			FSID     string   `json:"fsid"`
			Created  cephTime `json:"created"`
			Modified cephTime `json:"modified"`
			Mons     []struct {
				Rank number `json:"rank"`
				Name string `json:"name"`
			} `json:"mons"`
		} `json:"monmap"`
	} `json:"mon_status"`
	MgrMap struct {
		ActiveName string `json:"active_name"`
		Standbys   []struct {
			Name string `json:"name"`
		} `json:"standbys"`
		ActiveChange cephTime `json:"active_change"`
	} `json:"mgr_map"`
	FSMap struct {
		Standbys    []json.RawMessage `json:"standbys"`
		Filesystems []struct {
			MDSMap struct {
				// Up maps ranks to daemons ({"mds_0": 4123}); some releases list them.
				Up   json.RawMessage `json:"up"`
				Info map[string]struct {
					State string `json:"state"`
				} `json:"info"`
			} `json:"mdsmap"`
		} `json:"filesystems"`
	} `json:"fs_map"`
	OSDMap osdMap `json:"osd_map"`
	Pools  []struct {
		ID       number            `json:"pool"`
		Name     string            `json:"pool_name"`
		Size     number            `json:"size"`
		MinSize  number            `json:"min_size"`
		PGNum    number            `json:"pg_num"`
		PGStatus map[string]number `json:"pg_status"`
	} `json:"pools"`
	PGInfo struct {
		ObjectStats struct {
			NumObjects number `json:"num_objects"`
		} `json:"object_stats"`
	} `json:"pg_info"`
	DF struct {
		Stats struct {
			TotalBytes      number `json:"total_bytes"`
			TotalAvailBytes number `json:"total_avail_bytes"`
			TotalUsedBytes  number `json:"total_used_bytes"`
		} `json:"stats"`
		Pools []struct {
			ID    number `json:"id"`
			Stats struct {
				Stored  number `json:"stored"`
				Objects number `json:"objects"`
			} `json:"stats"`
		} `json:"pools"`
	} `json:"df"`
	// ClientPerf's keys are absent on an idle cluster in some releases: absent is 0.
	ClientPerf struct {
		ReadBytesSec  number `json:"read_bytes_sec"`
		ReadOpPerSec  number `json:"read_op_per_sec"`
		WriteBytesSec number `json:"write_bytes_sec"`
		WriteOpPerSec number `json:"write_op_per_sec"`
	} `json:"client_perf"`
	RGW number `json:"rgw"`
}

// osdMap is the full OSD map (the dashboard: a list of OSDs) or its summary (`ceph status`:
// counts, nested one level deeper as "osdmap" before Octopus).
type osdMap struct {
	OSDs []struct {
		ID number `json:"osd"`
		Up number `json:"up"`
		In number `json:"in"`
	} `json:"osds"`
	NumOSDs      *number  `json:"num_osds"`
	NumUp        number   `json:"num_up_osds"`
	NumIn        number   `json:"num_in_osds"`
	LastUpChange cephTime `json:"last_up_change"`
	LastInChange cephTime `json:"last_in_change"`
	UpSince      cephTime `json:"osd_up_since"`
	InSince      cephTime `json:"osd_in_since"`
	Nested       *osdMap  `json:"osdmap"`
}

// ErrNotHealthReport says the body was not a Ceph health report (e.g. a login page).
var ErrNotHealthReport = errors.New("not a Ceph health report")

// DecodeHealthFull reads the dashboard's /api/health/full report.
func DecodeHealthFull(data []byte) (*cluster.Ceph, error) {
	var h healthFull
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHealthReport, err)
	}
	if !strings.HasPrefix(h.Health.Status, "HEALTH_") {
		return nil, fmt.Errorf("%w: no health status", ErrNotHealthReport)
	}
	c := &cluster.Ceph{
		Origin:      cluster.OriginDashboard,
		FSID:        text(h.MonStatus.Monmap.FSID, maxName),
		Health:      text(h.Health.Status, maxName),
		Checks:      decodeChecks(h.Health.Checks),
		MonCreated:  h.MonStatus.Monmap.Created.Time,
		MonModified: h.MonStatus.Monmap.Modified.Time,
		MgrActive:   text(h.MgrMap.ActiveName, maxName),
		MgrChanged:  h.MgrMap.ActiveChange.Time,
		Objects:     h.PGInfo.ObjectStats.NumObjects.bytes(),
		Usage: cluster.Usage{Used: h.DF.Stats.TotalUsedBytes.bytes(), Available: h.DF.Stats.TotalAvailBytes.bytes(),
			Total: h.DF.Stats.TotalBytes.bytes()},
		IO: cluster.IO{ReadBytesPerSec: float64(h.ClientPerf.ReadBytesSec), WriteBytesPerSec: float64(h.ClientPerf.WriteBytesSec),
			ReadOpsPerSec: float64(h.ClientPerf.ReadOpPerSec), WriteOpsPerSec: float64(h.ClientPerf.WriteOpPerSec)},
		RGWDaemons: h.RGW.count(),
	}
	c.Mons, c.Quorum = mons(&h)
	for _, s := range h.MgrMap.Standbys {
		c.MgrStandbys = append(c.MgrStandbys, text(s.Name, maxName))
	}
	c.Filesystems = len(h.FSMap.Filesystems)
	c.MDSStandby = len(h.FSMap.Standbys)
	for _, fs := range h.FSMap.Filesystems {
		c.MDSUp += countEntries(fs.MDSMap.Up)
		for _, d := range fs.MDSMap.Info {
			if d.State == "up:standby-replay" {
				c.MDSStandby++
			}
		}
	}
	c.Crashes = recentCrashes(c.Checks)
	h.OSDMap.fill(c)
	// df's per-pool figures by pool id (the pools' list and df are separate reports).
	type poolDF struct{ stored, objects int64 }
	df := map[int]poolDF{}
	for _, p := range h.DF.Pools {
		c.StoredBytes += p.Stats.Stored.bytes()
		df[p.ID.int()] = poolDF{p.Stats.Stored.bytes(), p.Stats.Objects.bytes()}
	}
	for _, p := range h.Pools {
		d := df[p.ID.int()]
		pool := cluster.Pool{Name: text(p.Name, maxName), Size: p.Size.count(), MinSize: p.MinSize.count(), PGs: p.PGNum.count(),
			StoredBytes: d.stored, Objects: d.objects}
		for state, n := range p.PGStatus {
			if activeClean(state) {
				pool.ActiveClean += n.count()
			}
		}
		c.Pools = append(c.Pools, pool)
	}
	return c, nil
}

// mons are the monitors in rank order and those in quorum. The quorum is a list of ranks
// (mon_status) or of names (`ceph status`). Upstream listed every monitor as the quorum.
func mons(h *healthFull) (all, quorum []string) {
	byRank := map[int]string{}
	for _, m := range h.MonStatus.Monmap.Mons {
		name := text(m.Name, maxName)
		all = append(all, name)
		byRank[m.Rank.int()] = name
	}
	for _, r := range h.MonStatus.Quorum {
		if name, ok := byRank[r.int()]; ok {
			quorum = append(quorum, name)
		}
	}
	if len(h.MonStatus.Quorum) == 0 {
		for _, n := range h.MonStatus.QuorumNames {
			quorum = append(quorum, text(n, maxName))
		}
	}
	return all, quorum
}

// fill sets the OSD counts and change times from whichever form the map has.
func (m *osdMap) fill(c *cluster.Ceph) {
	if m.Nested != nil && m.NumOSDs == nil && len(m.OSDs) == 0 {
		m = m.Nested
	}
	if len(m.OSDs) > 0 {
		c.OSDs = len(m.OSDs)
		for _, o := range m.OSDs {
			if o.Up > 0 {
				c.OSDsUp++
			}
			if o.In > 0 {
				c.OSDsIn++
			}
			c.OSDList = append(c.OSDList, cluster.OSD{ID: o.ID.int(), Up: o.Up > 0, In: o.In > 0})
		}
		sort.Slice(c.OSDList, func(i, j int) bool { return c.OSDList[i].ID < c.OSDList[j].ID })
	} else if m.NumOSDs != nil {
		c.OSDs, c.OSDsUp, c.OSDsIn = m.NumOSDs.count(), m.NumUp.count(), m.NumIn.count()
	}
	c.OSDUpChanged, c.OSDInChanged = m.LastUpChange.Time, m.LastInChange.Time
	if c.OSDUpChanged.IsZero() {
		c.OSDUpChanged = m.UpSince.Time
	}
	if c.OSDInChanged.IsZero() {
		c.OSDInChanged = m.InSince.Time
	}
}

// activeClean reports a PG state that is active and clean, whatever else it is doing
// ("active+clean+scrubbing+deep"); upstream counted only the exact "active+clean".
func activeClean(state string) bool {
	var active, clean bool
	for _, part := range strings.Split(state, "+") {
		active = active || part == "active"
		clean = clean || part == "clean"
	}
	return active && clean
}

// countEntries counts a JSON object's keys or an array's elements (upstream counted a map as
// one, so two active MDS ranks showed as one).
func countEntries(raw json.RawMessage) int {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		return len(m)
	}
	var l []json.RawMessage
	if json.Unmarshal(raw, &l) == nil {
		return len(l)
	}
	return 0
}

// check is one health check in either form.
type check struct {
	Type     string `json:"type"`
	Severity string `json:"severity"`
	Summary  struct {
		Message string `json:"message"`
		Count   number `json:"count"`
	} `json:"summary"`
	// Detail is a list of {"message": …} (the mon's health report); plain strings decode too.
	Detail []detailLine `json:"detail"`
	Muted  bool         `json:"muted"`
}

// detailLine is one of a check's details: {"message": "…"} or "…".
type detailLine string

func (d *detailLine) UnmarshalJSON(b []byte) error {
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &m) == nil {
		*d = detailLine(m.Message)
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*d = detailLine(s)
	}
	return nil
}

// decodeChecks reads the checks as a list or as a map by name (sorted by name).
func decodeChecks(raw json.RawMessage) []cluster.Check {
	var list []check
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		var byName map[string]check
		if json.Unmarshal(trimmed, &byName) != nil {
			return nil
		}
		for name, c := range byName {
			c.Type = name
			list = append(list, c)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Type < list[j].Type })
	} else if json.Unmarshal(trimmed, &list) != nil {
		return nil
	}
	out := make([]cluster.Check, 0, len(list))
	for _, c := range list {
		chk := cluster.Check{Name: text(c.Type, maxName), Severity: text(c.Severity, maxName),
			Message: text(c.Summary.Message, maxMessage), Muted: c.Muted, Count: c.Summary.Count.bytes()}
		for _, d := range c.Detail[:min(len(c.Detail), cluster.MaxCheckDetails)] {
			if d != "" {
				chk.Details = append(chk.Details, text(string(d), maxMessage))
			}
		}
		out = append(out, chk)
	}
	return out
}
