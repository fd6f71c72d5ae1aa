package jobqueue

import (
	"slices"
	"sync"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// notification is the payload of NOTIFY plinth_jobqueue (see jobs_notify() in the migration).
type notification struct {
	Schema   string   `json:"schema"`
	ID       string   `json:"id"`
	State    int32    `json:"state"`
	Target   string   `json:"target"`
	Required []string `json:"required"`
	Runner   string   `json:"runner"`
	Cancel   bool     `json:"cancel"`
	Force    bool     `json:"force"`
}

func (n notification) change() Change {
	return Change{JobID: n.ID, State: vagrant.Job_State(n.State), AssignedRunner: n.Runner,
		CancelRequested: n.Cancel, CancelForced: n.Force}
}

// hub routes notifications to the Assign calls and Watches of this process.
//
// A queued job wakes one idle Assign call that can take it, not all of them: with many idle
// runners, waking every one costs a wasted claim transaction per runner per job. Should the
// woken call claim an older job instead, it hands the notification on (handOff), so each
// queued job keeps someone looking for it until it is claimed; a woken call that claims
// nothing means the job is gone (claimed, canceled or expired). Polling is the safety net.
type hub struct {
	mu      sync.Mutex
	waiters map[*waiter]struct{}
	watches map[string]map[*Watch]struct{}
}

// waiter is one blocked Assign call.
type waiter struct {
	runner   string
	byIDOnly bool
	tokens   []string // the runner's component tokens, sorted; empty takes any job
	// wake carries the notification that woke the call, or a zero one meaning "look
	// anyway" (after a reconnect). Capacity 1: a signaled waiter is not signaled again.
	wake chan notification
}

func newHub() *hub {
	return &hub{waiters: map[*waiter]struct{}{}, watches: map[string]map[*Watch]struct{}{}}
}

func (h *hub) addWaiter(runner string, byIDOnly bool, tokens []string) *waiter {
	w := &waiter{runner: runner, byIDOnly: byIDOnly, tokens: tokens, wake: make(chan notification, 1)}
	h.mu.Lock()
	h.waiters[w] = struct{}{}
	h.mu.Unlock()
	return w
}

func (h *hub) removeWaiter(w *waiter) {
	h.mu.Lock()
	delete(h.waiters, w)
	h.mu.Unlock()
}

// fits applies claimSQL's rules: a job for this runner, or for any runner and the runner
// is not by_id_only; and the runner has the components the job needs (or claims none).
func (w *waiter) fits(n notification) bool {
	if n.Target != w.runner && (n.Target != "" || w.byIDOnly) {
		return false
	}
	if len(w.tokens) == 0 {
		return true
	}
	for _, r := range n.Required {
		if _, ok := slices.BinarySearch(w.tokens, r); !ok {
			return false
		}
	}
	return true
}

// dispatch wakes one idle waiter that fits a queued job and updates the job's watches.
func (h *hub) dispatch(n notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if vagrant.Job_State(n.State) == vagrant.Job_QUEUED {
		h.wakeOne(n)
	}
	for w := range h.watches[n.ID] {
		w.deliver(n.change())
	}
}

// handOff passes on the notification that woke a waiter which then claimed another job.
func (h *hub) handOff(n notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wakeOne(n)
}

// wakeOne signals one unsignaled waiter that fits n (map order spreads the work); with
// none, every fitting waiter is already about to claim. Called with mu held.
func (h *hub) wakeOne(n notification) {
	for w := range h.waiters {
		if len(w.wake) == 0 && w.fits(n) {
			w.wake <- n
			return
		}
	}
}

// wakeAll wakes every waiter: after a reconnect notifications may have been missed.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters {
		select {
		case w.wake <- notification{}:
		default:
		}
	}
}

func (h *hub) watchedIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.watches))
	for id := range h.watches {
		ids = append(ids, id)
	}
	return ids
}

// deliverAll delivers a freshly read change to every watch of its job.
func (h *hub) deliverAll(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watches[c.JobID] {
		w.deliver(c)
	}
}
