package volume

import (
	"strings"
	"sync"
)

// watchers fan a change out to every Watch stream. Each has a one-slot channel: a change
// while the slot is full is absorbed (coalesced), so a slow stream never blocks a change and
// always sees the latest state on its next send.
type watchers struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func (w *watchers) add() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}
}

func (w *watchers) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// SnapshotPrefix names the short-lived snapshots a backup reads from (with device-mapper);
// listings leave them out, and a restart removes ones a crash left behind.
const SnapshotPrefix = "plinthsnap-"

// IsSnapshotName reports whether a volume is one of the agent's backup snapshots.
func IsSnapshotName(name string) bool { return strings.HasPrefix(name, SnapshotPrefix) }
