// Package backoff spaces out retries: exponential delays with jitter, so replicas or runners
// retrying against a recovering dependency do not stampede in lockstep.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff yields delays from Min doubling per failed attempt up to Max, each a random duration
// in [d/2, d] ("equal jitter": at least half, so the backoff still grows). The zero value is
// not useful: set Min and Max.
type Backoff struct {
	Min, Max time.Duration
	attempt  int
}

// Next returns the wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	d := b.Min << min(b.attempt, 30)
	if d <= 0 || d > b.Max {
		d = b.Max
	}
	b.attempt++
	half := d / 2
	return half + rand.N(half+1)
}

// Reset starts over after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Sleep waits d, or until ctx is done or wake (which may be nil) receives; it reports whether
// the full delay passed.
func Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return false
	case <-t.C:
		return true
	}
}
