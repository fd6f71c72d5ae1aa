package jobqueue

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

func TestWaiterFitsLikeClaimSQL(t *testing.T) {
	t.Parallel()
	queued := int32(vagrant.Job_QUEUED)
	cases := []struct {
		name string
		w    waiter
		n    notification
		want bool
	}{
		{"any job, plain runner", waiter{runner: "a"}, notification{State: queued}, true},
		{"any job, by_id_only runner", waiter{runner: "a", byIDOnly: true}, notification{State: queued}, false},
		{"targeted at the by_id_only runner", waiter{runner: "a", byIDOnly: true}, notification{State: queued, Target: "a"}, true},
		{"targeted at another runner", waiter{runner: "a"}, notification{State: queued, Target: "b"}, false},
		{"needs what the runner has", waiter{runner: "a", tokens: []string{"COMMAND", "PROVIDER", "PROVIDER:netns"}},
			notification{State: queued, Required: []string{"COMMAND", "PROVIDER"}}, true},
		{"needs what the runner lacks", waiter{runner: "a", tokens: []string{"COMMAND"}},
			notification{State: queued, Required: []string{"COMMAND", "PROVIDER"}}, false},
		{"runner claims no components", waiter{runner: "a"}, notification{State: queued, Required: []string{"PROVIDER"}}, true},
	}
	for _, c := range cases {
		if got := c.w.fits(c.n); got != c.want {
			t.Errorf("%s: fits = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestQueuedJobWakesOneFittingIdleWaiter(t *testing.T) {
	t.Parallel()
	h := newHub()
	local := h.addWaiter("local", true, nil)
	a := h.addWaiter("a", false, nil)
	b := h.addWaiter("b", false, nil)
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
	h.handOff(notification{ID: "j3", State: int32(vagrant.Job_QUEUED), Target: "a"})
	if n := <-a.wake; n.ID != "j3" {
		t.Fatalf("hand-off delivered %v", n)
	}
	h.wakeAll()
	if len(local.wake) != 1 || len(a.wake) != 1 {
		t.Fatal("wakeAll missed a waiter")
	}
}
