package runner

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff spaces out reconnection attempts: exponential from min to max, with jitter so that
// many runners restarted together do not reconnect in lockstep.
type backoff struct {
	min, max time.Duration
	attempt  int
}

// next returns the wait before the next attempt: a random duration in [d/2, d] where d doubles
// per failed attempt up to max.
func (b *backoff) next() time.Duration {
	d := b.min << min(b.attempt, 30)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.attempt++
	half := d / 2
	return half + rand.N(half+1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.attempt = 0 }

// sleep waits d or until ctx is done; it reports whether the full wait passed.
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
