package backup

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Policy says which base backups to keep; backups and WAL outside it are deleted.
type Policy struct {
	// Window is the recovery window ("7d"): every point in time from now back to the window's
	// start stays recoverable. Zero: no window.
	Window Window
	// KeepLast keeps the newest N completed backups whatever their age. Zero: no minimum.
	KeepLast int
}

// Window is a recovery window in CloudNativePG's retentionPolicy form: a count of hours,
// days, weeks or months.
type Window struct {
	N    int
	Unit byte // 'h', 'd', 'w' or 'm'
}

var windowRE = regexp.MustCompile(`^([1-9][0-9]{0,4})([hdwm])$`)

// ParsePolicy reads a recovery window ("" for none; "30d", "4w", "3m", also "12h") and a
// keep-last count; at least one must be given.
func ParsePolicy(window string, keepLast int) (Policy, error) {
	p := Policy{KeepLast: keepLast}
	if window != "" {
		m := windowRE.FindStringSubmatch(window)
		if m == nil {
			return Policy{}, invalid("recoveryWindow", "%q is not a recovery window: give a count and a unit h, d, w or m (e.g. 7d)", window)
		}
		p.Window.N, _ = strconv.Atoi(m[1])
		p.Window.Unit = m[2][0]
	}
	if keepLast < 0 {
		return Policy{}, invalid("keepLast", "must not be negative")
	}
	if p.Window.N == 0 && keepLast == 0 {
		return Policy{}, invalid("policy", "give a recovery window, a number of backups to keep, or both")
	}
	return p, nil
}

// String prints the policy in the form ParsePolicy reads.
func (p Policy) String() string {
	s := ""
	if p.Window.N > 0 {
		s = fmt.Sprintf("recovery window %d%c", p.Window.N, p.Window.Unit)
	}
	if p.KeepLast > 0 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("keep last %d", p.KeepLast)
	}
	return s
}

// start is the oldest point the window must keep recoverable (months are calendar months).
func (w Window) start(now time.Time) time.Time {
	switch w.Unit {
	case 'h':
		return now.Add(-time.Duration(w.N) * time.Hour)
	case 'd':
		return now.AddDate(0, 0, -w.N)
	case 'w':
		return now.AddDate(0, 0, -7*w.N)
	case 'm':
		return now.AddDate(0, -w.N, 0)
	}
	return now
}

// Plan is what a policy decides for one server.
type Plan struct {
	// Keep and Delete partition the server's backups.
	Keep, Delete []Stored
	// WALBefore is the oldest WAL segment still needed: archived WAL before it, on its
	// timeline or older ones, is deleted. "" keeps all WAL.
	WALBefore string
	// FirstRecoverabilityPoint is the earliest time a recovery can reach (the end of the
	// oldest kept backup); LastSuccessful the end of the newest completed backup.
	FirstRecoverabilityPoint, LastSuccessful time.Time
}

// plan applies p to backups (as List returns them). firstRequired is the WAL the operator
// said must stay (WAL.SetFirstRequired); the WAL horizon never passes it. Without any
// completed backup nothing is deleted: the archive may be all there is.
func plan(backups []Stored, p Policy, now time.Time, firstRequired string) Plan {
	var done []Stored
	for _, b := range backups {
		if b.complete() {
			done = append(done, b)
		}
	}
	if len(done) == 0 {
		return Plan{Keep: backups}
	}
	// Newest first: the order the policy counts in.
	slices.SortFunc(done, func(x, y Stored) int { return y.Info.EndTime.Compare(x.Info.EndTime) })
	keep := map[string]bool{done[0].ID: true}
	for i, b := range done {
		if i < p.KeepLast {
			keep[b.ID] = true
		}
	}
	if p.Window.N > 0 {
		start := p.Window.start(now)
		for _, b := range done {
			keep[b.ID] = true
			if !b.Info.EndTime.After(start) {
				break // the newest backup ending before the window's start reaches its start
			}
		}
	}
	oldest := done[0]
	for _, b := range done {
		if keep[b.ID] && b.ID < oldest.ID {
			oldest = b
		}
	}
	out := Plan{FirstRecoverabilityPoint: oldest.Info.EndTime, LastSuccessful: done[0].Info.EndTime, WALBefore: oldest.Info.BeginWAL}
	for _, b := range backups {
		// Incomplete backups (failed, interrupted, missing archives) go once a kept backup is
		// newer than them.
		if keep[b.ID] || !b.complete() && b.ID >= oldest.ID {
			out.Keep = append(out.Keep, b)
		} else {
			out.Delete = append(out.Delete, b)
		}
	}
	if _, fr, ok := segmentPosition(firstRequired); ok {
		if _, horizon, _ := segmentPosition(out.WALBefore); fr < horizon {
			out.WALBefore = firstRequired
		}
	}
	return out
}

// walObsolete reports whether an archived WAL file (its name without compression suffix)
// lies before the horizon: segments, .partial and .backup files of the horizon's timeline
// or an older one. History files always stay: they are tiny and every recovery crossing a
// timeline needs them.
func walObsolete(name, horizon string) bool {
	if horizon == "" || len(name) < 24 {
		return false
	}
	if rest := name[24:]; rest != "" && rest != ".partial" && !(len(rest) == 16 && rest[0] == '.' && rest[9:] == ".backup") {
		return false
	}
	tli, pos, ok := segmentPosition(name)
	htli, hpos, hok := segmentPosition(horizon)
	return ok && hok && tli <= htli && pos < hpos
}

// complete reports whether the backup can be restored: it completed and none of its
// archives is missing.
func (b Stored) complete() bool { return b.Usable() && len(b.Missing()) == 0 }

// WindowOf is the recovery window the backups (as List returns them) give today: the end of
// the oldest complete backup (the first recoverability point) and of the newest; zero times
// without any complete backup.
func WindowOf(backups []Stored) (first, last time.Time) {
	for _, b := range backups {
		if !b.complete() {
			continue
		}
		if end := b.Info.EndTime; first.IsZero() || end.Before(first) {
			first = end
		}
		if end := b.Info.EndTime; end.After(last) {
			last = end
		}
	}
	return first, last
}
