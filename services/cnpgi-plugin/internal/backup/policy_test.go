package backup

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)

// stored makes a backup that ended daysAgo days before now, starting at segment seg.
func stored(id string, status Status, daysAgo int, seg string) Stored {
	end := now.AddDate(0, 0, -daysAgo)
	return Stored{
		ID: id, Info: &Info{ID: id, Status: status, EndTime: end, BeginTime: end.Add(-time.Hour), BeginWAL: seg},
		Archives: []Archive{{Base: "data"}},
	}
}

func ids(bs []Stored) string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	// b1..b5 completed 30, 20, 10, 5 and 1 days ago; f1 failed between b2 and b3; f0 failed
	// before b1; r0 has no backup.info (interrupted).
	all := []Stored{
		{ID: "b0-r0", Keys: []string{"x"}},
		stored("b0-f0", StatusFailed, 35, "000000010000000000000001"),
		stored("b1", StatusDone, 30, "000000010000000000000010"),
		stored("b2", StatusDone, 20, "000000010000000000000020"),
		stored("b2-f1", StatusFailed, 15, ""),
		stored("b3", StatusDone, 10, "000000010000000000000030"),
		stored("b4", StatusDone, 5, "000000010000000000000040"),
		stored("b5", StatusDone, 1, "000000020000000000000050"),
	}
	cases := []struct {
		name          string
		policy        Policy
		firstRequired string
		keep, del     string
		horizon       string
	}{
		{"keep last 2", Policy{KeepLast: 2}, "", "b4 b5", "b0-r0 b0-f0 b1 b2 b2-f1 b3", "000000010000000000000040"},
		{"7 days: b3 is the newest backup that reaches the window's start", Policy{Window: Window{7, 'd'}}, "", "b3 b4 b5", "b0-r0 b0-f0 b1 b2 b2-f1", "000000010000000000000030"},
		{"12 days, a failed backup newer than the oldest kept stays", Policy{Window: Window{12, 'd'}}, "", "b2 b2-f1 b3 b4 b5", "b0-r0 b0-f0 b1", "000000010000000000000020"},
		{"window or count, whichever keeps more", Policy{Window: Window{2, 'd'}, KeepLast: 3}, "", "b3 b4 b5", "b0-r0 b0-f0 b1 b2 b2-f1", "000000010000000000000030"},
		{"1 month", Policy{Window: Window{1, 'm'}}, "", "b1 b2 b2-f1 b3 b4 b5", "b0-r0 b0-f0", "000000010000000000000010"},
		{"first required holds WAL back", Policy{KeepLast: 1}, "000000010000000000000011", "b5", "b0-r0 b0-f0 b1 b2 b2-f1 b3 b4", "000000010000000000000011"},
		{"first required later than the horizon changes nothing", Policy{KeepLast: 1}, "000000020000000000000060", "b5", "b0-r0 b0-f0 b1 b2 b2-f1 b3 b4", "000000020000000000000050"},
		{"the newest is always kept", Policy{Window: Window{1, 'h'}}, "", "b5", "b0-r0 b0-f0 b1 b2 b2-f1 b3 b4", "000000020000000000000050"},
	}
	for _, c := range cases {
		p := plan(all, c.policy, now, c.firstRequired)
		keep, del := ids(p.Keep), ids(p.Delete)
		if keep != c.keep || del != c.del || p.WALBefore != c.horizon {
			t.Errorf("%s: keep %q delete %q horizon %s; want %q %q %s", c.name, keep, del, p.WALBefore, c.keep, c.del, c.horizon)
		}
		if !p.LastSuccessful.Equal(now.AddDate(0, 0, -1)) {
			t.Errorf("%s: last successful %v", c.name, p.LastSuccessful)
		}
		oldest := p.Keep[slices.IndexFunc(p.Keep, func(b Stored) bool { return b.Usable() })]
		if !p.FirstRecoverabilityPoint.Equal(oldest.Info.EndTime) {
			t.Errorf("%s: first recoverability point %v, want %v", c.name, p.FirstRecoverabilityPoint, oldest.Info.EndTime)
		}
	}
	// No completed backup: nothing goes, not even WAL.
	p := plan([]Stored{stored("f", StatusFailed, 40, "000000010000000000000001")}, Policy{KeepLast: 1}, now, "")
	if len(p.Delete) != 0 || p.WALBefore != "" || !p.FirstRecoverabilityPoint.IsZero() {
		t.Fatalf("without a completed backup: %+v", p)
	}
	// A completed backup missing its PGDATA archive does not count.
	broken := stored("b9", StatusDone, 0, "000000020000000000000090")
	broken.Archives = nil
	p = plan(append(slices.Clone(all), broken), Policy{KeepLast: 1}, now, "")
	if ids(p.Keep) != "b5 b9" {
		t.Fatalf("broken newest backup: keep %s", ids(p.Keep))
	}
}

func TestWALObsolete(t *testing.T) {
	const horizon = "000000020000000100000010"
	for name, want := range map[string]bool{
		"00000002000000010000000F":                 true,
		"000000010000000100000005":                 true,
		"000000020000000100000010":                 false,
		"000000030000000000000001":                 false, // a later timeline stays
		"00000002000000010000000F.partial":         true,
		"00000002000000010000000F.00000028.backup": true,
		"00000002.history":                         false,
		"000000020000000100000001.junk":            false,
	} {
		if got := walObsolete(name, horizon); got != want {
			t.Errorf("walObsolete(%s) = %v, want %v", name, got, want)
		}
	}
	if walObsolete("000000010000000000000001", "") {
		t.Error("no horizon must keep everything")
	}
}

func TestParsePolicy(t *testing.T) {
	if p, err := ParsePolicy("30d", 2); err != nil || p.Window != (Window{30, 'd'}) || p.KeepLast != 2 || p.String() != "recovery window 30d, keep last 2" {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []struct {
		w string
		n int
	}{{"", 0}, {"7", 0}, {"0d", 0}, {"7y", 0}, {"7d", -1}} {
		if _, err := ParsePolicy(bad.w, bad.n); err == nil {
			t.Errorf("ParsePolicy(%q, %d) accepted", bad.w, bad.n)
		}
	}
	if got := (Window{1, 'm'}).start(now); !got.Equal(time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("one month before %v: %v", now, got) // March 31 minus a month normalises to March 3
	}
}
