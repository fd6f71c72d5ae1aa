package cluster

import (
	"slices"
	"testing"
)

func TestRecommendationsAreTheRadarsBrokenRules(t *testing.T) {
	safe := Pool{Name: "rbd", Size: 3, MinSize: 2}
	type rec struct {
		title             string
		level             Level
		current, expected string
	}
	cases := []struct {
		name string
		r    Redundancy
		want []rec
	}{
		{"nothing to judge", Redundancy{}, nil},
		{"production", Redundancy{Pools: []Pool{safe}, Mons: 3, Filesystems: 1, MDS: 2, ObjectStores: 1, RGW: 2}, nil},
		{"min_size unknown (Prometheus) is not held against a pool", Redundancy{Pools: []Pool{{Name: "p", Size: 3}}, Mons: 5}, nil},
		{"size unknown says nothing", Redundancy{Pools: []Pool{{Name: "p"}}, Mons: 3}, nil},
		{"single-node test cluster", Redundancy{Pools: []Pool{{Name: ".mgr", Size: 1, MinSize: 1}}, Mons: 1}, []rec{
			{"Pool - .mgr: Replicated size less than 3", LevelCritical, "1", "3"},
			{"Monitors: fewer than 3", LevelHigh, "1", "3"}}},
		{"two copies, served from one", Redundancy{Pools: []Pool{safe, {Name: "data", Size: 2, MinSize: 1}}, Mons: 2}, []rec{
			{"Pool - data: Replicated size less than 3", LevelHigh, "2", "3"},
			{"Monitors: fewer than 3", LevelHigh, "2", "3"}}},
		{"three copies served from one", Redundancy{Pools: []Pool{{Name: "data", Size: 3, MinSize: 1}}, Mons: 3}, []rec{
			{"Pool - data: min_size less than 2", LevelHigh, "1", "2"}}},
		{"one MDS, one gateway", Redundancy{Pools: []Pool{safe}, Mons: 3, Filesystems: 1, MDS: 1, ObjectStores: 1, RGW: 1}, []rec{
			{"File systems: fewer than 2 metadata servers", LevelMedium, "1", "2"},
			{"Object stores: fewer than 2 gateways", LevelMedium, "1", "2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []rec
			for _, r := range Recommendations(c.r) {
				got = append(got, rec{r.Title, r.Level, r.Current, r.Expected})
				if r.Description == "" || r.Topic == 0 {
					t.Errorf("%q: no description or topic", r.Title)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got  %v\nwant %v", got, c.want)
			}
			// One set of rules: no recommendation exactly when the radar's reliability is full.
			if full := ReliabilityScore(c.r) == 100; full != (len(got) == 0) && c.name != "size unknown says nothing" && c.name != "nothing to judge" {
				t.Errorf("reliability %v with %d recommendations", ReliabilityScore(c.r), len(got))
			}
		})
	}
}
