package jobqueue

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobsubs"
)

// notification is the payload of NOTIFY plinth_jobqueue (jobs_notify() in migration 003).
// Runner ids and component names are client text, so they travel as digests (digest).
type notification struct {
	Schema   string
	ID       string
	State    int32
	Target   string   // digest of the target runner; "" for any runner
	Required []string // digests of the required component tokens
	Runner   string   // digest of the assigned runner; "" for none
	Cancel   bool
	Force    bool
}

// parseNotification reads "<schema> <id> <state> <cancel><force> <runner|-> <route|->".
func parseNotification(payload string) (notification, error) {
	f := strings.Split(payload, " ")
	if len(f) != 6 || len(f[3]) != 2 {
		return notification{}, fmt.Errorf("malformed job notification (%d fields)", len(f))
	}
	state, err := strconv.ParseInt(f[2], 10, 32)
	if err != nil {
		return notification{}, fmt.Errorf("malformed job notification state: %w", err)
	}
	n := notification{Schema: f[0], ID: f[1], State: int32(state), Cancel: f[3][0] == '1', Force: f[3][1] == '1'}
	if f[4] != "-" {
		n.Runner = f[4]
	}
	if f[5] != "-" {
		n.Target, n.Required = parseRoute(f[5])
	}
	return n, nil
}

// routeOf is a job's route column: "<target digest>;<required digests, comma-separated>".
func routeOf(target string, required []string) string {
	return digest(target) + ";" + strings.Join(digests(required), ",")
}

func parsedRoute(s string) route {
	t, r := parseRoute(s)
	return route{target: t, required: r}
}

func parseRoute(s string) (target string, required []string) {
	target, req, _ := strings.Cut(s, ";")
	if req != "" {
		required = strings.Split(req, ",")
	}
	return target, required
}

func (n notification) route() route { return route{target: n.Target, required: n.Required} }

func (n notification) change() Change {
	return Change{JobID: n.ID, State: vagrant.Job_State(n.State), runner: n.Runner,
		CancelRequested: n.Cancel, CancelForced: n.Force}
}

// digest is how notifications name a runner or a component token: md5 in hex, as Postgres'
// md5() computes it in jobs_notify(); "" stays "".
func digest(s string) string {
	if s == "" {
		return ""
	}
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func digests(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = digest(t)
	}
	slices.Sort(out)
	return out
}

// hub routes work to the Assign calls and changes to the Watches of this process.
//
// A job queued here goes straight to an idle Assign call that can take it (reserve): its
// insert already assigns it, one commit instead of two. A job queued elsewhere, or while no
// call here was idle, is announced by NOTIFY and wakes one fitting Assign call, not all of
// them: with many idle runners, waking every one costs a wasted claim per runner per job.
// Should the woken call claim an older job instead, it hands the notification on (handOff),
// so each queued job keeps someone looking for it until it is claimed; a woken call that
// claims nothing means the job is gone (claimed, canceled or expired). Polling is the
// safety net.
type hub struct {
	mu      sync.Mutex
	waiters map[*waiter]struct{}
	watches jobsubs.Sets[*Watch]
}

// waiterState says what a blocked Assign call is doing; guarded by hub.mu.
type waiterState int

const (
	claiming waiterState = iota // claiming a job itself: may be woken, is never handed one
	idle                        // blocked: a job queued here may be reserved for it
	reserved                    // a job is being committed for it: assigned delivers it
)

// waiter is one blocked Assign call.
type waiter struct {
	runner string
	digest string // of runner
	// known is set once the runner's registration was read (the first claim); until then
	// every queued job may be for it.
	known    bool
	byIDOnly bool
	tokens   []string // digests of the runner's component tokens, sorted; empty takes any job
	state    waiterState
	// wake carries the notification that woke the call, or a zero one meaning "look
	// anyway" (after a reconnect). Capacity 1: a signaled waiter is not signaled again.
	wake chan notification
	// assigned delivers the job reserved for the call, or nil when its commit failed.
	assigned chan *vagrant.Job
}

func newHub() *hub {
	return &hub{waiters: map[*waiter]struct{}{}, watches: jobsubs.Sets[*Watch]{}}
}

func (h *hub) addWaiter(runner string) *waiter {
	w := &waiter{runner: runner, digest: digest(runner), wake: make(chan notification, 1),
		assigned: make(chan *vagrant.Job, 1)}
	h.mu.Lock()
	h.waiters[w] = struct{}{}
	h.mu.Unlock()
	return w
}

// removeWaiter unregisters w and reports whether a job was being reserved for it: then the
// caller must take it from w.assigned (and give it back).
func (h *hub) removeWaiter(w *waiter) (wasReserved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiters, w)
	return w.state == reserved
}

// goIdle records what the runner can take and lets a job queued here be handed to w, whose
// claim found nothing. A notification that woke w for a job it cannot take (it was woken
// before its registration was known) is passed on.
func (h *hub) goIdle(w *waiter, byIDOnly bool, tokens []string, wokenBy notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !w.known {
		w.known, w.byIDOnly, w.tokens = true, byIDOnly, digests(tokens)
	}
	w.state = idle
	if wokenBy.ID != "" && !w.fits(wokenBy.route()) {
		h.wakeOne(wokenBy)
	}
}

// startClaiming takes w out of the idle set before it claims, unless a job is being reserved
// for it: then the caller must take it from w.assigned first (nil: the reservation failed,
// and w claims). Either way w is claiming afterwards.
func (h *hub) startClaiming(w *waiter) (wasReserved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wasReserved = w.state == reserved
	w.state = claiming
	return wasReserved
}

// route is whom a job is for, in digests: a target runner ("" for any) and the component
// tokens it needs.
type route struct {
	target   string
	required []string
}

// fits applies claimSQL's rules: a job for this runner, or for any runner and the runner
// is not by_id_only; and the runner has the components the job needs (or claims none).
func (w *waiter) fits(r route) bool {
	if !w.known {
		return true
	}
	if r.target != w.digest && (r.target != "" || w.byIDOnly) {
		return false
	}
	if len(w.tokens) == 0 {
		return true
	}
	for _, req := range r.required {
		if _, ok := slices.BinarySearch(w.tokens, req); !ok {
			return false
		}
	}
	return true
}

// reserve picks an idle waiter that can take a job for r and reserves it; nil when none.
func (h *hub) reserve(r route) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters {
		if w.state == idle && w.known && w.fits(r) {
			w.state = reserved
			return w
		}
	}
	return nil
}

// dispatch wakes one waiter that fits a queued job and updates the job's watches.
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

// wakeOne signals one unsignaled, unreserved waiter that fits n (map order spreads the
// work); with none, every fitting waiter is already about to claim. Called with mu held.
func (h *hub) wakeOne(n notification) {
	r := n.route()
	for w := range h.waiters {
		if w.state != reserved && len(w.wake) == 0 && w.fits(r) {
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
