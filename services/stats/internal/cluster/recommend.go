package cluster

import (
	"fmt"
	"strconv"
)

// The redundancy the radar's reliability, the resources' reliability scores and the
// recommendations all hold a cluster to (one set of numbers for the three).
const (
	// MinPoolSize is the copies (k+m chunks) a pool should keep.
	MinPoolSize = 3
	// MinPoolMinSize is the copies a pool should need to serve I/O: with 1, a write that only
	// one OSD holds is lost with that OSD.
	MinPoolMinSize = 2
	// MinMons keeps a majority of monitors when one fails.
	MinMons = 3
	// MinDaemons is the MDS or gateway daemons that let one fail without an outage.
	MinDaemons = 2
)

// Redundant says whether a pool keeps at least MinPoolSize copies and needs at least
// MinPoolMinSize of them to serve I/O (an unknown min_size, 0, does not count against it).
func (p Pool) Redundant() bool {
	return p.Size >= MinPoolSize && (p.MinSize == 0 || p.MinSize >= MinPoolMinSize)
}

// Level is how urgent a recommendation is, numbered as api.resources.ceph.v1.RecommendationLevel.
type Level int

// The levels.
const (
	LevelUnspecified Level = iota
	LevelInformal
	LevelLow
	LevelMedium
	LevelHigh
	LevelCritical
)

// Topic is what a recommendation is about, numbered as api.resources.ceph.v1.RecommendationType.
type Topic int

// The topics the rules below raise (the others of the wire are not used).
const (
	TopicCluster Topic = 3
	TopicPool    Topic = 4
	TopicMon     Topic = 6
)

// Recommendation is one change the cluster's configuration should have.
type Recommendation struct {
	Title, Description string
	Level              Level
	Topic              Topic
	// Current and Expected are the setting's value now and the one recommended; both empty
	// when the recommendation is not about one value.
	Current, Expected string
}

// Recommendations are the rules of the radar's reliability that r breaks, each as what to
// change: a pool with fewer than MinPoolSize copies (worse, a single copy), a pool that serves
// I/O from one copy, fewer than MinMons monitors, a file system or object store with fewer than
// MinDaemons daemons. Pools come first, in r's order; a cluster that breaks none has none.
func Recommendations(r Redundancy) []Recommendation {
	var out []Recommendation
	for _, p := range r.Pools {
		switch {
		case p.Size <= 0: // not known: nothing to say
		case p.Size < MinPoolSize:
			level := LevelHigh
			if p.Size == 1 {
				level = LevelCritical
			}
			out = append(out, Recommendation{
				Title:       fmt.Sprintf("Pool - %s: Replicated size less than %d", p.Name, MinPoolSize),
				Description: fmt.Sprintf("Pool replicated size should be %d or higher in production environments: with %d, losing %s loses data.", MinPoolSize, p.Size, copiesLost(p.Size)),
				Level:       level, Topic: TopicPool,
				Current: strconv.Itoa(p.Size), Expected: strconv.Itoa(MinPoolSize),
			})
		case p.MinSize > 0 && p.MinSize < MinPoolMinSize:
			out = append(out, Recommendation{
				Title:       fmt.Sprintf("Pool - %s: min_size less than %d", p.Name, MinPoolMinSize),
				Description: fmt.Sprintf("Pool min_size should be %d or higher: with 1 the pool accepts writes that only one OSD holds.", MinPoolMinSize),
				Level:       LevelHigh, Topic: TopicPool,
				Current: strconv.Itoa(p.MinSize), Expected: strconv.Itoa(MinPoolMinSize),
			})
		}
	}
	if r.Mons > 0 && r.Mons < MinMons {
		out = append(out, Recommendation{
			Title:       fmt.Sprintf("Monitors: fewer than %d", MinMons),
			Description: fmt.Sprintf("Run at least %d monitors so that a majority remains in quorum when one fails.", MinMons),
			Level:       LevelHigh, Topic: TopicMon,
			Current: strconv.Itoa(r.Mons), Expected: strconv.Itoa(MinMons),
		})
	}
	if r.Filesystems > 0 && r.MDS < MinDaemons {
		out = append(out, Recommendation{
			Title:       fmt.Sprintf("File systems: fewer than %d metadata servers", MinDaemons),
			Description: "Run a standby metadata server beside each active one so that a file system survives the loss of one daemon.",
			Level:       LevelMedium, Topic: TopicCluster,
			Current: strconv.Itoa(r.MDS), Expected: strconv.Itoa(MinDaemons),
		})
	}
	if r.ObjectStores > 0 && r.RGW < MinDaemons {
		out = append(out, Recommendation{
			Title:       fmt.Sprintf("Object stores: fewer than %d gateways", MinDaemons),
			Description: "Run at least two object gateways so that S3 clients survive the loss of one daemon.",
			Level:       LevelMedium, Topic: TopicCluster,
			Current: strconv.Itoa(r.RGW), Expected: strconv.Itoa(MinDaemons),
		})
	}
	return out
}

// copiesLost names what losing data takes with size copies (size < MinPoolSize).
func copiesLost(size int) string {
	if size == 1 {
		return "one OSD"
	}
	return "two OSDs at once"
}
