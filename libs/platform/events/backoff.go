package events

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing delays with jitter, so replicas retrying
// against a recovering NATS do not stampede in lockstep.
type backoff struct {
	min, max time.Duration
	attempt  int
}

func (b *backoff) next() time.Duration {
	d := b.min << min(b.attempt, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	// "Equal jitter": at least half the delay, so the backoff still grows.
	half := d / 2
	return half + rand.N(half+1)
}

func (b *backoff) reset() { b.attempt = 0 }

// sleep waits d or until ctx is done; it reports whether the full delay passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
