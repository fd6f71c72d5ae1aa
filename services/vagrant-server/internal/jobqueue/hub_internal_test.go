package jobqueue

import (
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// known returns a waiter whose registration was read, as after its first claim.
func known(h *hub, runner string, byIDOnly bool, tokens ...string) *waiter {
	w := h.addWaiter(runner)
	h.goIdle(w, byIDOnly, tokens, notification{})
	return w
}

func TestWaiterFitsLikeClaimSQL(t *testing.T) {
	t.Parallel()
	h := newHub()
	for _, c := range []struct {
		name string
		w    *waiter
		r    route
		want bool
	}{
		{"any job, plain runner", known(h, "a", false), route{}, true},
		{"any job, by_id_only runner", known(h, "a", true), route{}, false},
		{"targeted at the by_id_only runner", known(h, "a", true), route{target: digest("a")}, true},
		{"targeted at another runner", known(h, "a", false), route{target: digest("b")}, false},
		{"needs what the runner has", known(h, "a", false, "COMMAND", "PROVIDER", "PROVIDER:netns"),
			route{required: digests([]string{"COMMAND", "PROVIDER"})}, true},
		{"needs what the runner lacks", known(h, "a", false, "COMMAND"),
			route{required: digests([]string{"COMMAND", "PROVIDER"})}, false},
		{"runner claims no components", known(h, "a", false), route{required: digests([]string{"PROVIDER"})}, true},
		{"registration not read yet", h.addWaiter("a"), route{target: digest("b")}, true},
	} {
		if got := c.w.fits(c.r); got != c.want {
			t.Errorf("%s: fits = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestQueuedJobWakesOneFittingIdleWaiter(t *testing.T) {
	t.Parallel()
	h := newHub()
	local := known(h, "local", true)
	a := known(h, "a", false)
	b := known(h, "b", false)
	signaled := func() (n int) {
		for _, w := range []*waiter{local, a, b} {
			n += len(w.wake)
		}
		return n
	}
	job := notification{ID: "j1", State: int32(vagrant.Job_QUEUED)}
	h.dispatch(job)
	if signaled() != 1 || len(local.wake) != 0 {
		t.Fatalf("one any-runner job signaled %d waiters (local: %d)", signaled(), len(local.wake))
	}
	// The second job goes to the other idle waiter, not again to the signaled one.
	h.dispatch(notification{ID: "j2", State: int32(vagrant.Job_QUEUED)})
	if len(a.wake) != 1 || len(b.wake) != 1 {
		t.Fatal("second job did not wake the other idle waiter")
	}
	// No idle fitting waiter left: nobody more is woken; state changes wake nobody.
	h.dispatch(notification{ID: "j3", State: int32(vagrant.Job_QUEUED)})
	h.dispatch(notification{ID: "j1", State: int32(vagrant.Job_WAITING)})
	if len(local.wake) != 0 {
		t.Fatal("by_id_only waiter woken for any-runner jobs")
	}
	// A hand-off reaches a waiter that became idle.
	<-a.wake
	h.removeWaiter(b)
	h.handOff(notification{ID: "j3", State: int32(vagrant.Job_QUEUED), Target: digest("a")})
	if n := <-a.wake; n.ID != "j3" {
		t.Fatalf("hand-off delivered %v", n)
	}
	h.wakeAll()
	if len(local.wake) != 1 || len(a.wake) != 1 {
		t.Fatal("wakeAll missed a waiter")
	}
}

func TestReserveHandsAJobToOneIdleFittingWaiterOnly(t *testing.T) {
	t.Parallel()
	h := newHub()
	claimingNow := h.addWaiter("c") // its first claim is in flight: never reserved
	byID := known(h, "x", true)
	if w := h.reserve(route{}); w != nil {
		t.Fatalf("reserved %s for an any-runner job: only a claiming and a by_id_only waiter exist", w.runner)
	}
	if w := h.reserve(route{target: digest("x")}); w != byID {
		t.Fatalf("job for x reserved %v, want x", w)
	}
	if w := h.reserve(route{target: digest("x")}); w != nil {
		t.Fatal("a reserved waiter was reserved again")
	}
	h.dispatch(notification{ID: "j", State: int32(vagrant.Job_QUEUED), Target: digest("x")})
	if len(byID.wake) != 0 {
		t.Fatal("a reserved waiter was woken")
	}
	if len(claimingNow.wake) != 1 {
		t.Fatal("a waiter whose registration is not read yet was not woken: the job could be for it")
	}
	if !h.startClaiming(byID) {
		t.Fatal("a reserved waiter started claiming instead of taking its job")
	}
	y := known(h, "y", false)
	if h.reserve(route{}) != y || !h.removeWaiter(y) {
		t.Fatal("removing a reserved waiter did not say a job is coming for it")
	}
}

// A waiter woken before its registration was known may learn the job was never its own: the
// wake-up goes on to a runner that can take the job, or that job would wait for the poll.
func TestWakeForAnotherRunnerIsPassedOn(t *testing.T) {
	t.Parallel()
	h := newHub()
	early := h.addWaiter("plain")
	target := known(h, "local", true)
	h.mu.Lock()
	target.state = claiming
	target.wake <- notification{} // busy: signaled already
	h.mu.Unlock()
	job := notification{ID: "j", State: int32(vagrant.Job_QUEUED), Target: digest("local")}
	h.dispatch(job)
	if len(early.wake) != 1 {
		t.Fatal("the unknown waiter was not woken")
	}
	<-target.wake // local is ready for another signal
	n := <-early.wake
	h.goIdle(early, false, nil, n) // its claim found nothing: the job is for local
	if got := <-target.wake; got.ID != "j" {
		t.Fatalf("local got %v, want the job's notification", got)
	}
}

func TestNotificationPayload(t *testing.T) {
	t.Parallel()
	rt := routeOf("r1", []string{"PROVIDER", "COMMAND"})
	n, err := parseNotification("vagrant 01J 1 10 - " + rt)
	if err != nil {
		t.Fatal(err)
	}
	want := route{target: digest("r1"), required: digests([]string{"COMMAND", "PROVIDER"})}
	if n.Schema != "vagrant" || n.ID != "01J" || n.State != 1 || !n.Cancel || n.Force || n.Runner != "" ||
		n.route().target != want.target || !slices.Equal(n.route().required, want.required) {
		t.Fatalf("parsed %+v", n)
	}
	if n, _ := parseNotification("vagrant 01J 2 00 " + digest("r1") + " -"); n.Target != "" || n.Required != nil || !n.change().AssignedTo("r1") {
		t.Fatalf("assigned job parsed %+v", n)
	}
	for _, bad := range []string{"", "vagrant 01J", `{"schema":"vagrant"}`, "vagrant 01J x 00 - -", "vagrant 01J 1 0 - -"} {
		if _, err := parseNotification(bad); err == nil {
			t.Errorf("parseNotification(%q) accepted", bad)
		}
	}
}
