package volume

import (
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

// Subscribe registers a watcher: its channel receives a value after changes (several
// changes between two reads coalesce into one). cancel unregisters it.
func (s *Service) Subscribe() (ch <-chan struct{}, cancel func()) { return s.watchers.add() }

// Notify wakes every watcher (the capacity poll calls it when lvm shows a change made
// outside the agent).
func (s *Service) Notify() { s.watchers.notify() }
