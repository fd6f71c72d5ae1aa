package identity

import (
	"errors"
	"time"
)

// LockoutPolicy decides when repeated login failures lock a username or a client address.
// Every attempt is counted before the password is checked (so parallel guesses cannot slip past
// the threshold) and a success takes its own count back.
type LockoutPolicy struct {
	// UserThreshold is the number of failures for one username after which it is locked.
	UserThreshold int
	// AddrThreshold is the number of failures from one client address after which it is locked
	// (higher: many users may share a NAT address).
	AddrThreshold int
	// BaseDelay is the first lock interval; each further failure doubles it, up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps the lock interval.
	MaxDelay time.Duration
	// Forget is how long after the last failure a counter starts again from zero.
	Forget time.Duration
}

// DefaultLockoutPolicy locks a username after 5 failures and an address after 20, for 30 s
// doubling to at most an hour; counters are forgotten after a day without failures.
func DefaultLockoutPolicy() LockoutPolicy {
	return LockoutPolicy{UserThreshold: 5, AddrThreshold: 20, BaseDelay: 30 * time.Second, MaxDelay: time.Hour, Forget: 24 * time.Hour}
}

// Validate checks the policy is usable.
func (p LockoutPolicy) Validate() error {
	if p.UserThreshold < 1 || p.AddrThreshold < 1 {
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

// Counter is the stored failure count of one username or address.
type Counter struct {
	Failures    int
	LastFailure time.Time
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

// ErrLocked is returned while a username or address is locked out.
type ErrLocked struct {
	RetryAfter time.Duration
}

func (e *ErrLocked) Error() string {
	return "too many failed logins; retry after " + e.RetryAfter.Round(time.Second).String()
}
