package cluster

import (
	"context"
	"fmt"
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
		if v.Summary.Health != c.health || v.Summary.FSID != "" {
			t.Errorf("%s: %s, want %s", c.name, v.Summary.Health, c.health)
		}
		if c.health != HealthOK && len(v.Summary.Checks) == 0 {
			t.Errorf("%s: a %s without a check says nothing about why", c.name, c.health)
		}
	}
}

// memoryHistory is a HistoryStore in memory, for the Recorder's rules.
type memoryHistory struct{ samples []Sample }

func (m *memoryHistory) AddSamples(_ context.Context, s []Sample) error {
	m.samples = append(m.samples, s...)
	return nil
}

func (m *memoryHistory) SamplesSince(_ context.Context, t time.Time) ([]Sample, error) {
	var out []Sample
	for i, s := range m.samples {
		if !s.At.Before(t) {
			if len(out) == 0 && i > 0 {
				out = append(out, m.samples[i-1])
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memoryHistory) SamplesBetween(_ context.Context, from, to time.Time) ([]Sample, error) {
	var out []Sample
	for _, s := range m.samples {
		if !s.At.Before(from) && !s.At.After(to) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memoryHistory) PruneSamples(context.Context, time.Time, int) (int64, error) { return 0, nil }

func TestRecorderCountsChangesWithinTheWindowAndSurvivesARestart(t *testing.T) {
	store := &memoryHistory{}
	r := NewRecorder(store, RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	ok := Sample{Health: HealthOK, OSDsUp: 1, OSDsIn: 1}
	warn := ok
	warn.Health = HealthWarn
	at := func(s Sample, d time.Duration) Sample { s.At = t0.Add(d); return s }

	if n := r.Observe(at(ok, 0)); n != 0 {
		t.Fatalf("the first sample is no change: %d", n)
	}
	if n := r.Observe(at(ok, 10*time.Second)); n != 0 {
		t.Fatalf("same state: %d", n)
	}
	if n := r.Observe(at(warn, 20*time.Second)); n != 1 {
		t.Fatalf("OK→WARN: %d changes, want 1", n)
	}
	if n := r.Observe(at(ok, 30*time.Second)); n != 2 {
		t.Fatalf("WARN→OK: %d changes, want 2", n)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(store.samples) != 3 {
		t.Fatalf("stored %d samples; want 3 (an unchanged state 10 s later is not sampled)", len(store.samples))
	}
	// A restart: a new recorder over the same store remembers the changes.
	r2 := NewRecorder(store, RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	if err := r2.Load(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := r2.Observe(at(ok, time.Minute)); n != 2 {
		t.Fatalf("after a restart: %d changes, want 2", n)
	}
	// The changes leave the window.
	if n := r2.Observe(at(ok, 11*time.Minute)); n != 0 {
		t.Fatalf("11 minutes later: %d changes, want 0", n)
	}
	if n := r2.Observe(at(warn, 12*time.Minute)); n != 1 {
		t.Fatalf("a change at the window's start must count against the state before: %d", n)
	}
}

func TestRecorderGrowth(t *testing.T) {
	r := NewRecorder(&memoryHistory{}, RecorderOptions{Window: time.Hour, Every: time.Minute})
	r.Observe(Sample{At: t0, Health: HealthOK, Used: 1000})
	if _, ok := r.Growth(); ok {
		t.Fatal("one sample makes no trend")
	}
	r.Observe(Sample{At: t0.Add(2 * time.Minute), Health: HealthOK, Used: 13000})
	if g, ok := r.Growth(); !ok || g != 100 {
		t.Fatalf("growth %v %v, want 100 B/s", g, ok)
	}
}

func TestRecorderBetweenHasTheSamplesNotWrittenYet(t *testing.T) {
	store := &memoryHistory{}
	r := NewRecorder(store, RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	for i := range 5 {
		r.Observe(Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: HealthOK, Used: int64(i)})
		if i == 2 {
			if err := r.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(store.samples) != 3 {
		t.Fatalf("stored %d, want 3 (two still pending)", len(store.samples))
	}
	got, err := r.Between(context.Background(), t0.Add(time.Minute), t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var used []int64
	for _, s := range got {
		used = append(used, s.Used)
	}
	if fmt.Sprint(used) != "[1 2 3 4]" {
		t.Fatalf("between 1m and 4m: used %v, want [1 2 3 4] once each, oldest first", used)
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
