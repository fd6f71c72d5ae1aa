package cluster

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestComposeAddsTheInventoryToCeph(t *testing.T) {
	ceph := &Ceph{FSID: "f", Health: HealthWarn, Checks: []Check{{Name: "OSDMAP_FLAGS", Severity: HealthWarn, Message: "noout flag(s) set"}},
		Mons: []string{"a"}, Pools: []Pool{{Size: 1, MinSize: 1}},
		Usage: Usage{Used: 100, Available: 300, Total: 400}, Volumes: 2, VolumesKnown: true}
	inv := &Inventory{Capacity: Usage{Used: 100, Available: 100, Total: 200}, Volumes: 3,
		Nodes:    []Node{{Name: "n1", Status: StatusReady}, {Name: "n2", Status: StatusNotReady}},
		Problems: []Check{{Name: "NODE_STALE"}}}
	v := compose(t0, ceph, nil, inv, nil, nil)
	if v.Summary.Usage != (Usage{Used: 200, Available: 400, Total: 600}) || v.Summary.Volumes != 5 {
		t.Fatalf("usage %+v volumes %d: the LVM capacity and volumes must be added", v.Summary.Usage, v.Summary.Volumes)
	}
	if v.Summary.Health != HealthWarn || len(v.Summary.Checks) != 1 {
		t.Fatalf("with Ceph, Ceph's health stands: %s %v", v.Summary.Health, v.Summary.Checks)
	}
	want := Radar{ClusterHealth: 50, NodesHealth: 50, CapacityAvailable: 66.7, Stability: 90, Reliability: 0}
	if v.Radar != want {
		t.Fatalf("radar %+v, want %+v", v.Radar, want)
	}
}

func TestComposeFallsBackToRookAndThenTheInventory(t *testing.T) {
	kube := &Kube{RookCeph: &Ceph{FSID: "rook-fsid", Health: HealthOK}, Nodes: []Node{{Name: "k1", Status: StatusReady}},
		Redundancy: Redundancy{Pools: []Pool{{Size: 3, MinSize: 2}}, Mons: 3}}
	inv := &Inventory{Nodes: []Node{{Name: "lvm1", Status: StatusReady}}}
	v := compose(t0, nil, kube, inv, nil, nil)
	if v.Summary.FSID != "rook-fsid" || v.Radar.ClusterHealth != 100 || v.Radar.Reliability != 100 {
		t.Fatalf("without the Ceph source, Rook's report speaks: %+v %+v", v.Summary, v.Radar)
	}
	if len(v.Nodes) != 1 || v.Nodes[0].Name != "k1" {
		t.Fatalf("with Kubernetes, its nodes are listed: %v", v.Nodes)
	}

	cases := []struct {
		name   string
		inv    *Inventory
		health string
	}{
		{"no nodes yet", &Inventory{}, HealthWarn},
		{"all fine", &Inventory{Nodes: []Node{{Status: StatusReady}}}, HealthOK},
		{"one stale", &Inventory{Nodes: []Node{{Status: StatusReady}, {Status: StatusNotReady}}, Problems: []Check{{Name: "NODE_STALE"}}}, HealthWarn},
		{"none ready", &Inventory{Nodes: []Node{{Status: StatusNotReady}}, Problems: []Check{{Name: "NODE_STALE"}}}, HealthErr},
	}
	for _, c := range cases {
		v := compose(t0, nil, nil, c.inv, nil, nil)
		if v.Summary.Health != c.health || v.Summary.FSID != "" || v.Summary.Origin != OriginInventory {
			t.Errorf("%s: %s, want %s", c.name, v.Summary.Health, c.health)
		}
		if c.health != HealthOK && len(v.Summary.Checks) == 0 {
			t.Errorf("%s: a %s without a check says nothing about why", c.name, c.health)
		}
	}
}

func TestThinKeepsTheFirstAndTheNewestOfEachStretch(t *testing.T) {
	var samples []Sample
	for i := range 100 {
		samples = append(samples, Sample{At: t0.Add(time.Duration(i) * time.Second), Used: int64(i)})
	}
	if got := Thin(samples, 100); len(got) != 100 {
		t.Fatalf("100 of 100: %d", len(got))
	}
	for _, max := range []int{2, 3, 7, 10, 99} {
		got := Thin(samples, max)
		if len(got) > max || len(got) < max-1 {
			t.Fatalf("max %d: %d points", max, len(got))
		}
		if got[0].Used != 0 || got[len(got)-1].Used != 99 {
			t.Errorf("max %d: from %d to %d, want the first and the last sample", max, got[0].Used, got[len(got)-1].Used)
		}
		for i := 1; i < len(got); i++ {
			if !got[i].At.After(got[i-1].At) {
				t.Fatalf("max %d: not in time order at %d", max, i)
			}
		}
	}
	// A burst (many samples in one second) does not crowd out the rest of the span.
	burst := append([]Sample{}, samples[:10]...)
	for i := range 50 {
		burst = append(burst, Sample{At: t0.Add(10*time.Second + time.Duration(i)*time.Millisecond), Used: 1000 + int64(i)})
	}
	burst = append(burst, samples[11:]...)
	got := Thin(burst, 10)
	if len(got) > 10 || got[len(got)-1].Used != 99 || got[len(got)-2].Used < 80 {
		t.Fatalf("burst thinned to %v", got)
	}
}
