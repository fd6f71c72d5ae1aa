package cluster

import (
	"testing"
)

func TestHealthScore(t *testing.T) {
	for status, want := range map[string]float64{
		"HEALTH_OK": 100, "HEALTH_WARN": 50, "HEALTH_ERR": 0, "HEALTH_OKAY": 0, "": 0,
	} {
		if got := HealthScore(status); got != want {
			t.Errorf("%q: %v, want %v", status, got, want)
		}
	}
}

func TestNodesScoreIsAFractionAndSurvivesNoNodes(t *testing.T) {
	n := func(s ...Status) []Node {
		out := make([]Node, len(s))
		for i := range s {
			out[i].Status = s[i]
		}
		return out
	}
	cases := []struct {
		nodes []Node
		want  float64
	}{
		{nil, 0},
		{n(StatusReady), 100},
		{n(StatusReady, StatusNotReady), 50},
		{n(StatusReady, StatusReady, StatusNotReady), 66.7},
		{n(StatusProgressing, StatusUnknown, StatusNotReady), 0},
	}
	for _, c := range cases {
		if got := NodesScore(c.nodes); got != c.want {
			t.Errorf("%v: %v, want %v", c.nodes, got, c.want)
		}
	}
}

func TestCapacityScoreIsTheFreeShare(t *testing.T) {
	cases := []struct {
		u    Usage
		want float64
	}{
		{Usage{}, 0},
		{Usage{Used: 25, Available: 75, Total: 100}, 75},
		{Usage{Used: 19019, Available: 1073722805, Total: 1073741824}, 100},
		{Usage{Used: 100, Available: 0, Total: 100}, 0},
		{Usage{Used: 1, Available: 2, Total: 3}, 66.7},
	}
	for _, c := range cases {
		if got := CapacityScore(c.u); got != c.want {
			t.Errorf("%+v: %v, want %v", c.u, got, c.want)
		}
	}
}

func TestStabilityScore(t *testing.T) {
	warn := Check{Name: "OSDMAP_FLAGS"}
	muted := Check{Name: "RECENT_CRASH", Muted: true}
	cases := []struct {
		checks  []Check
		changes int
		want    float64
	}{
		{nil, 0, 100},
		{[]Check{warn}, 0, 90},
		{[]Check{warn}, 1, 85},
		{[]Check{warn, muted}, 0, 90},
		{[]Check{warn, warn, warn, warn, warn, warn, warn, warn, warn, warn}, 3, 0},
	}
	for _, c := range cases {
		if got := StabilityScore(c.checks, c.changes); got != c.want {
			t.Errorf("%d checks, %d changes: %v, want %v", len(c.checks), c.changes, got, c.want)
		}
	}
}

func TestReliabilityScore(t *testing.T) {
	safe := Pool{Size: 3, MinSize: 2}
	single := Pool{Size: 1, MinSize: 1}
	cases := []struct {
		name string
		r    Redundancy
		want float64
	}{
		{"nothing to judge", Redundancy{}, 0},
		{"single-node test cluster", Redundancy{Pools: []Pool{single}, Mons: 1}, 0},
		{"production", Redundancy{Pools: []Pool{safe, safe}, Mons: 3, Filesystems: 1, MDS: 2, ObjectStores: 1, RGW: 2}, 100},
		{"half the pools safe", Redundancy{Pools: []Pool{safe, single}, Mons: 3}, 75},
		{"min_size 1 is not safe", Redundancy{Pools: []Pool{{Size: 3, MinSize: 1}}, Mons: 3}, 50},
		{"min_size unknown (Prometheus)", Redundancy{Pools: []Pool{{Size: 3}}, Mons: 3}, 100},
		{"one MDS", Redundancy{Pools: []Pool{safe}, Mons: 3, Filesystems: 1, MDS: 1}, 66.7},
		{"one gateway", Redundancy{Pools: []Pool{safe}, Mons: 5, ObjectStores: 1, RGW: 1}, 66.7},
	}
	for _, c := range cases {
		if got := ReliabilityScore(c.r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestResourceReliability(t *testing.T) {
	pools := map[Pool]Reliability{
		{}: ReliabilityUnknown, {Size: 1}: ReliabilityNone, {Size: 2, MinSize: 1}: ReliabilityDegraded,
		{Size: 3, MinSize: 2}: ReliabilityOK, {Size: 3, MinSize: 1}: ReliabilityDegraded, {Size: 3}: ReliabilityOK,
	}
	for p, want := range pools {
		if got := PoolReliability(p); got != want {
			t.Errorf("pool %+v: %v, want %v", p, got, want)
		}
	}
	for count, want := range map[int]Reliability{0: ReliabilityUnknown, 1: ReliabilityNone, 2: ReliabilityDegraded, 3: ReliabilityOK, 5: ReliabilityOK} {
		if got := MonReliability(count); got != want {
			t.Errorf("%d mons: %v, want %v", count, got, want)
		}
	}
	for count, want := range map[int]Reliability{0: ReliabilityUnknown, 1: ReliabilityNone, 2: ReliabilityOK} {
		if got := DaemonReliability(count); got != want {
			t.Errorf("%d daemons: %v, want %v", count, got, want)
		}
	}
	deployments := map[[2]int32]Reliability{
		{0, 0}: ReliabilityUnknown, {1, 1}: ReliabilityNone, {2, 2}: ReliabilityOK, {3, 1}: ReliabilityDegraded, {2, 0}: ReliabilityNone,
	}
	for d, want := range deployments {
		if got := DeploymentReliability(d[0], d[1]); got != want {
			t.Errorf("deployment wanted %d ready %d: %v, want %v", d[0], d[1], got, want)
		}
	}
	if got := ReliabilityNone.Worst(ReliabilityOK); got != ReliabilityNone {
		t.Errorf("worst of none and ok: %v", got)
	}
	if got := ReliabilityUnknown.Worst(ReliabilityDegraded); got != ReliabilityDegraded {
		t.Errorf("unknown must not win: %v", got)
	}
}
