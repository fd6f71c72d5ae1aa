package identity

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// counted is a counter of n failures, the last ago before now.
func counted(n int, now time.Time, ago time.Duration) Counter {
	return Counter{Failures: n, LastFailure: now.Add(-ago)}
}

func addr(c Counter) *Counter { return &c }

// TestLockoutCount is the lockout rule without a store: which attempts are counted, which
// are throttled and for how long, across the pair and address counters.
func TestLockoutCount(t *testing.T) {
	p := DefaultLockoutPolicy() // pair 5, address 20, 30 s doubling to 1 h, forgotten after 24 h
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	fresh := Counter{LastFailure: time.Unix(0, 0).UTC()} // as a store creates it
	cases := []struct {
		name   string
		before Counters
		want   Counters      // when counted
		locked time.Duration // > 0: throttled for this long, nothing counted
	}{
		{name: "new counters count one each",
			before: Counters{Pair: fresh, Address: addr(fresh)},
			want:   Counters{Pair: counted(1, now, 0), Address: addr(counted(1, now, 0))}},
		{name: "an unknown address is counted by its pair alone",
			before: Counters{Pair: counted(2, now, time.Minute)},
			want:   Counters{Pair: counted(3, now, 0)}},
		{name: "below both thresholds the count grows",
			before: Counters{Pair: counted(4, now, time.Second), Address: addr(counted(19, now, time.Second))},
			want:   Counters{Pair: counted(5, now, 0), Address: addr(counted(20, now, 0))}},
		{name: "a pair at its threshold is throttled for the base delay",
			before: Counters{Pair: counted(5, now, 0), Address: addr(counted(5, now, 0))},
			locked: 30 * time.Second},
		{name: "the throttle runs from the last failure",
			before: Counters{Pair: counted(5, now, 10*time.Second), Address: addr(counted(5, now, 10*time.Second))},
			locked: 20 * time.Second},
		{name: "after the interval the attempt is counted again",
			before: Counters{Pair: counted(5, now, 30*time.Second), Address: addr(counted(5, now, 30*time.Second))},
			want:   Counters{Pair: counted(6, now, 0), Address: addr(counted(6, now, 0))}},
		{name: "each failure past the threshold doubles the delay",
			before: Counters{Pair: counted(8, now, 0)},
			locked: 4 * time.Minute},
		{name: "the delay stops doubling at the maximum",
			before: Counters{Pair: counted(50, now, 0)},
			locked: time.Hour},
		{name: "an address at its threshold throttles a fresh pair",
			before: Counters{Pair: fresh, Address: addr(counted(20, now, 5*time.Second))},
			locked: 25 * time.Second},
		{name: "with both throttled the longer throttle is the answer",
			before: Counters{Pair: counted(6, now, 0), Address: addr(counted(20, now, 0))},
			locked: time.Minute},
		{name: "a counter idle for Forget starts again from one",
			before: Counters{Pair: counted(50, now, 24*time.Hour), Address: addr(counted(50, now, 25*time.Hour))},
			want:   Counters{Pair: counted(1, now, 0), Address: addr(counted(1, now, 0))}},
		{name: "each counter is forgotten on its own",
			before: Counters{Pair: counted(3, now, time.Hour), Address: addr(counted(19, now, 24*time.Hour))},
			want:   Counters{Pair: counted(4, now, 0), Address: addr(counted(1, now, 0))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Count(now)(c.before)
			var le *LockedError
			if c.locked > 0 {
				if !errors.As(err, &le) || le.RetryAfter != c.locked {
					t.Fatalf("err %v, want throttled for %v", err, c.locked)
				}
				if !equalCounters(got, c.before) {
					t.Fatalf("a throttled attempt changed the counters: %+v, want %+v", got, c.before)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want counted", err)
			}
			if !equalCounters(got, c.want) {
				t.Fatalf("counted %s, want %s", show(got), show(c.want))
			}
		})
	}
}

// TestLockoutBackoffDoubles drives one pair through Count as a store would (writing what it
// returns): the threshold's worth of failures pass, then each attempt after an interval is
// counted and throttles the next for twice as long, up to MaxDelay.
func TestLockoutBackoffDoubles(t *testing.T) {
	p := LockoutPolicy{PairThreshold: 3, AddrThreshold: 100, BaseDelay: time.Minute, MaxDelay: 5 * time.Minute, Forget: time.Hour}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := Counters{Pair: Counter{LastFailure: time.Unix(0, 0)}}
	count := func() time.Duration {
		t.Helper()
		after, err := p.Count(at)(c)
		var le *LockedError
		if errors.As(err, &le) {
			return le.RetryAfter
		}
		if err != nil {
			t.Fatal(err)
		}
		c = after
		return 0
	}
	for i := range p.PairThreshold {
		if d := count(); d != 0 {
			t.Fatalf("failure %d throttled for %v", i+1, d)
		}
	}
	for _, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		if d := count(); d != want {
			t.Fatalf("after %d failures: throttled for %v, want %v", c.Pair.Failures, d, want)
		}
		at = at.Add(want)
		if d := count(); d != 0 {
			t.Fatalf("after the %v interval: still throttled for %v", want, d)
		}
	}
	at = at.Add(p.Forget)
	if d := count(); d != 0 || c.Pair.Failures != 1 {
		t.Fatalf("after Forget: throttled %v with %d failures, want counted as the first", d, c.Pair.Failures)
	}
}

func equalCounters(a, b Counters) bool {
	same := func(x, y Counter) bool { return x.Failures == y.Failures && x.LastFailure.Equal(y.LastFailure) }
	if (a.Address == nil) != (b.Address == nil) {
		return false
	}
	return same(a.Pair, b.Pair) && (a.Address == nil || same(*a.Address, *b.Address))
}

func show(c Counters) string {
	if c.Address == nil {
		return fmt.Sprintf("pair %+v, no address counter", c.Pair)
	}
	return fmt.Sprintf("pair %+v, address %+v", c.Pair, *c.Address)
}
