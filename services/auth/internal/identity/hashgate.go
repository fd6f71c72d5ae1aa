package identity

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// BusyRetryAfter is what a login refused by a full hash gate is told to wait: a few hashes' time,
// rounded up to the one-second granularity of retry-after.
const BusyRetryAfter = time.Second

// hashGate bounds the argon2id work of logins: slots hashes run at once (each takes the
// configured memory) and at most queue more wait for a slot; any further login is refused at
// once with *BusyError. One client address may hold at most slots places, so a storm from one
// address leaves the queue to everyone else; and reserve of the places are kept for addresses
// a user logged in from successfully in the last day (in this process), so a storm spread over
// many fresh addresses cannot take every place from known users. Without the gate, 100
// parallel wrong logins took auth from 309 to 856 MB RSS and every login, right or wrong, to a
// median of 4.3 s.
type hashGate struct {
	slots   chan struct{}
	limit   int // slots + queue
	reserve int // of limit, places only addresses with a recent success may take
	perAddr int // places one client address may hold

	mu       sync.Mutex
	admitted int                  // logins holding or waiting for a slot
	byAddr   map[string]int       // of which, per client address ("" unknown)
	vouched  map[string]time.Time // address → its last successful login
}

// Bounds of the gate's memory of addresses with a successful login.
const (
	vouchFor      = 24 * time.Hour
	maxVouchedLen = 4096
)

// newHashGate sizes the gate; slots 0 means runtime.GOMAXPROCS (the cores auth may use) and
// queue 0 twice the slots.
func newHashGate(slots, queue int) (*hashGate, error) {
	if slots < 0 || queue < 0 {
		return nil, errors.New("argon2id concurrency and queue must not be negative")
	}
	if slots == 0 {
		slots = runtime.GOMAXPROCS(0)
	}
	if queue == 0 {
		queue = 2 * slots
	}
	return &hashGate{slots: make(chan struct{}, slots), limit: slots + queue, reserve: min(slots, queue),
		perAddr: slots, byAddr: map[string]int{}, vouched: map[string]time.Time{}}, nil
}

// vouch remembers that a user logged in successfully from addr at now.
func (g *hashGate) vouch(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, known := g.vouched[addr]; !known && len(g.vouched) >= maxVouchedLen {
		for a, at := range g.vouched { // drop the expired, else any one
			if now.Sub(at) >= vouchFor || len(g.vouched) >= maxVouchedLen {
				delete(g.vouched, a)
			}
		}
	}
	g.vouched[addr] = now
}

// admit reserves a place for one login's hashing from addr, or returns *BusyError when the gate
// or addr's share of it is full. The caller must call leave once it has done all its hashing.
func (g *hashGate) admit(addr string, now time.Time) (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit := g.limit - g.reserve
	if at, ok := g.vouched[addr]; ok && now.Sub(at) < vouchFor {
		limit = g.limit
	}
	if g.admitted >= limit || g.byAddr[addr] >= g.perAddr {
		return nil, &BusyError{RetryAfter: BusyRetryAfter}
	}
	g.admitted++
	g.byAddr[addr]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.admitted--
		if g.byAddr[addr]--; g.byAddr[addr] == 0 {
			delete(g.byAddr, addr)
		}
	}, nil
}

// run waits for a slot (or the end of ctx) and runs hash in it. Only admitted logins call it.
func (g *hashGate) run(ctx context.Context, hash func()) error {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.slots }()
	hash()
	return nil
}
