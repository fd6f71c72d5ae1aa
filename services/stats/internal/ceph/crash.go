package ceph

import (
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// crashChecks are the checks the mgr's crash module raises for recent, unarchived crash
// reports: daemons, and (since Quincy) mgr modules.
var crashChecks = map[string]bool{"RECENT_CRASH": true, "RECENT_MGR_MODULE_CRASH": true}

// crashLine is one of their details, as the crash module writes it:
// "<entity> crashed on host <host> at <timestamp>".
var crashLine = regexp.MustCompile(`^(\S+) crashed on host (\S+) at (.+)$`)

// crashTimeLayouts are the crash module's timestamp forms (DATEFMT and OLD_DATEFMT, with the
// UTC "Z" it appends or not).
var crashTimeLayouts = []string{"2006-01-02T15:04:05.999999999Z", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z",
	"2006-01-02 15:04:05.999999999", time.RFC3339Nano}

// recentCrashes reads the crash checks' details into one entry per daemon (its count and
// latest time), the latest first. Ceph lists at most 30 crashes and then "and N more": those
// are counted only in the check's summary.
func recentCrashes(checks []cluster.Check) []cluster.Crash {
	byDaemon := map[string]*cluster.Crash{}
	var order []string
	for _, c := range checks {
		if !crashChecks[c.Name] {
			continue
		}
		for _, d := range c.Details {
			m := crashLine.FindStringSubmatch(d)
			if m == nil {
				continue
			}
			at := crashTime(m[3])
			cr, ok := byDaemon[m[1]]
			if !ok {
				cr = &cluster.Crash{Daemon: m[1], Host: m[2]}
				byDaemon[m[1]] = cr
				order = append(order, m[1])
			}
			cr.Count++
			if at.After(cr.Last) {
				cr.Last, cr.Host = at, m[2]
			}
		}
	}
	out := make([]cluster.Crash, 0, len(order))
	for _, d := range order {
		out = append(out, *byDaemon[d])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		return out[i].Daemon < out[j].Daemon
	})
	return out
}

// crashTime is a crash report's timestamp (always UTC), or zero when it is in no known form.
func crashTime(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, l := range crashTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
