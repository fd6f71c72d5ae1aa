package identity

import (
	"errors"
	"time"
)

// LockoutPolicy decides when repeated login failures throttle a (username, client address) pair
// or a client address. There is deliberately no lock on a username alone: anyone could trigger
// it, so it would lock the real user out (OWASP ASVS V2.2, NIST 800-63B 5.2.2). Guesses at one
// user from one address are throttled by the pair, spraying many users from one address by the
// address; a throttled address or pair never stops the same user signing in from elsewhere.
// Every attempt is counted before the password is checked (so parallel guesses cannot slip past
// the threshold) and a success takes its own count back.
type LockoutPolicy struct {
	// PairThreshold is the number of failures for one username from one client address after
	// which that pair is throttled.
	PairThreshold int
	// AddrThreshold is the number of failures from one client address, whatever the username,
	// after which it is throttled (higher: many users may share a NAT address).
	AddrThreshold int
	// BaseDelay is the first lock interval; each further failure doubles it, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps the lock interval.
	MaxDelay time.Duration
	// Forget is how long after the last failure a counter starts again from zero.
	Forget time.Duration
}

// DefaultLockoutPolicy throttles a (username, address) pair after 5 failures and an address
// after 20, for 30 s doubling to at most an hour; counters are forgotten after a day without
// failures.
func DefaultLockoutPolicy() LockoutPolicy {
	return LockoutPolicy{PairThreshold: 5, AddrThreshold: 20, BaseDelay: 30 * time.Second, MaxDelay: time.Hour, Forget: 24 * time.Hour}
}

// Validate checks the policy is usable.
func (p LockoutPolicy) Validate() error {
	if p.PairThreshold < 1 || p.AddrThreshold < 1 {
		return errors.New("lockout thresholds must be at least 1")
	}
	if p.BaseDelay <= 0 || p.MaxDelay < p.BaseDelay {
		return errors.New("lockout delays must be positive and max >= base")
	}
	if p.Forget < p.MaxDelay {
		return errors.New("lockout forget period must be at least the max delay")
	}
	return nil
}

// Counter is the stored failure count of one (username, address) pair or one address. A
// counter the store has just created has no failures and a LastFailure long ago; the zero
// Counter is no counter at all: a store keeps no row for it.
type Counter struct {
	Failures    int
	LastFailure time.Time
}

// Counters are the failure counters one attempt is counted against: its (username, address)
// pair's and its address's. An attempt from an unknown address ("", a unix socket) has no
// address counter (Address is nil): it is a pair of its own, and shares nothing with others.
type Counters struct {
	Pair    Counter
	Address *Counter
}

// Count is the lockout rule for one attempt at at, before its password is checked, as the
// count Store.BeginAttempt takes: given the attempt's counters as stored (before), it returns
// them with the attempt counted as a failure (a success takes it back later), or a
// *LockedError — for the longer of the two throttles — while the pair or the address is
// throttled, and then nothing is to be counted: a throttled attempt must not lengthen the
// throttle it met.
func (p LockoutPolicy) Count(at time.Time) func(before Counters) (Counters, error) {
	return func(before Counters) (Counters, error) {
		locked := p.LockedFor(before.Pair, p.PairThreshold, at)
		if before.Address != nil {
			locked = max(locked, p.LockedFor(*before.Address, p.AddrThreshold, at))
		}
		if locked > 0 {
			return before, &LockedError{RetryAfter: locked}
		}
		after := Counters{Pair: p.failed(before.Pair, at)}
		if before.Address != nil {
			addr := p.failed(*before.Address, at)
			after.Address = &addr
		}
		return after, nil
	}
}

// Forgive is what a successful attempt leaves of its counters (before, as stored, with the
// attempt counted by Count): the pair starts again from nothing (the zero Counter), the
// address only gets this attempt back, so logging into one's own account cannot wipe out the
// failures one's address earned guessing at others.
func Forgive(before Counters) Counters {
	var after Counters
	if before.Address != nil {
		addr := *before.Address
		addr.Failures = max(addr.Failures-1, 0)
		after.Address = &addr
	}
	return after
}

// failed is c with one more failure at at; a counter idle for Forget starts again from one.
func (p LockoutPolicy) failed(c Counter, at time.Time) Counter {
	if at.Sub(c.LastFailure) >= p.Forget {
		return Counter{Failures: 1, LastFailure: at}
	}
	return Counter{Failures: c.Failures + 1, LastFailure: at}
}

// LockedFor returns how much longer a key with counter c is locked at now (0: not locked).
// The count c includes failures only, not the attempt being decided.
func (p LockoutPolicy) LockedFor(c Counter, threshold int, now time.Time) time.Duration {
	if c.Failures < threshold || now.Sub(c.LastFailure) >= p.Forget {
		return 0
	}
	delay := p.BaseDelay
	for i := threshold; i < c.Failures && delay < p.MaxDelay; i++ {
		delay *= 2
	}
	delay = min(delay, p.MaxDelay)
	if left := c.LastFailure.Add(delay).Sub(now); left > 0 {
		return left
	}
	return 0
}
