package cluster

import "math"

// Radar is the dashboard's five indicators, each a percentage from 0 to 100 (the README
// documents the formulas; Koor's design document "Cluster Radar" is where they come from).
type Radar struct {
	ClusterHealth, NodesHealth, CapacityAvailable, Stability, Reliability float64
}

// Stability penalties: each active (unmuted) health check and each change of the cluster's
// state within the stability window.
const (
	CheckPenalty  = 10
	ChangePenalty = 5
)

// HealthScore is 100 for HEALTH_OK, 50 for HEALTH_WARN and 0 for HEALTH_ERR or an unknown
// status. (Koor's data-control-center compared against "HEALTH_OKAY", so a healthy cluster
// scored 0.)
func HealthScore(status string) float64 {
	switch status {
	case HealthOK:
		return 100
	case HealthWarn:
		return 50
	}
	return 0
}

// NodesScore is ready ÷ total × 100 as a real number; no nodes scores 0. (Upstream divided
// integers — 0 or 100 — and panicked without nodes.)
func NodesScore(nodes []Node) float64 {
	if len(nodes) == 0 {
		return 0
	}
	ready := 0
	for _, n := range nodes {
		if n.Status == StatusReady {
			ready++
		}
	}
	return percent(float64(ready), float64(len(nodes)))
}

// CapacityScore is free ÷ total × 100; no capacity scores 0. (Upstream reported the used
// ratio under this name.)
func CapacityScore(u Usage) float64 {
	if u.Total <= 0 {
		return 0
	}
	return percent(float64(max(u.Available, 0)), float64(u.Total))
}

// StabilityScore is 100 − 10 per active unmuted health check − 5 per change of state in the
// stability window, never below 0.
func StabilityScore(checks []Check, changes int) float64 {
	penalty := ChangePenalty * changes
	for _, c := range checks {
		if !c.Muted {
			penalty += CheckPenalty
		}
	}
	return max(0, 100-float64(penalty))
}

// ReliabilityScore applies the rule from Koor's radar design that upstream never implemented:
// every pool keeps at least 3 copies and needs 2 to serve I/O, there are at least 3 monitors,
// and file systems and object stores have at least 2 MDS and 2 gateway daemons. Each rule that
// applies counts equally (the pool rule by the share of pools that pass it); the score is the
// share met. Nothing to judge — no pools, no monitors — scores 0: nothing is redundant.
func ReliabilityScore(r Redundancy) float64 {
	var met, rules float64
	if len(r.Pools) > 0 {
		ok := 0
		for _, p := range r.Pools {
			if p.Redundant() {
				ok++
			}
		}
		met += float64(ok) / float64(len(r.Pools))
		rules++
	}
	if r.Mons > 0 {
		met += boolScore(r.Mons >= MinMons)
		rules++
	}
	if r.Filesystems > 0 {
		met += boolScore(r.MDS >= MinDaemons)
		rules++
	}
	if r.ObjectStores > 0 {
		met += boolScore(r.RGW >= MinDaemons)
		rules++
	}
	if rules == 0 {
		return 0
	}
	return percent(met, rules)
}

func boolScore(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// percent is part ÷ whole × 100, rounded to one decimal as the dashboard shows it.
func percent(part, whole float64) float64 {
	return math.Round(part/whole*1000) / 10
}
