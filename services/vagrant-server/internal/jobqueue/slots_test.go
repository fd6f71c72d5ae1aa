package jobqueue_test

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// A runner with several slots holds several jobs under one id: concurrent Assign calls of the
// id get different jobs, each job keeps its own lease (one that stops heartbeating fails
// alone while its sibling runs on and completes), and ListRunners shows one of them.
func TestOneRunnerIDHoldsSeveralJobs(t *testing.T) {
	t.Parallel()
	o := fastOptions()
	// The acks below only need to come in time, and under -race on a loaded machine 300 ms
	// between an assignment and its ack was once too short; the leases stay short.
	o.AckTimeout = 5 * time.Second
	q, ctx := openReplica(t, testenv.DB(t).URL, o).q, ctxT(t)
	runReaper(t, q, 50*time.Millisecond)
	register(t, q, "slots", false)
	first, second := assignLater(t, q, "slots"), assignLater(t, q, "slots")
	a, b := mustQueue(t, q, noopJob(anyRunner()), 0), mustQueue(t, q, noopJob(anyRunner()), 0)
	got := map[string]bool{}
	for _, c := range []<-chan *vagrant.Job{first, second} {
		select {
		case j := <-c:
			got[j.GetId()] = true
		case <-time.After(10 * time.Second):
			t.Fatal("an Assign of the runner's second slot got nothing while the first holds a job")
		}
	}
	if !got[a] || !got[b] {
		t.Fatalf("two slots of one runner were assigned %v, want %s and %s", got, a, b)
	}
	for _, id := range []string{a, b} {
		if _, err := q.Ack(ctx, id, "slots"); err != nil {
			t.Fatalf("Ack %s: %v", id, err)
		}
	}
	listed, err := q.ListRunners(ctx, "", 10)
	if err != nil || len(listed) != 1 || listed[0].Job == nil || (listed[0].Job.ID != a && listed[0].Job.ID != b) {
		t.Fatalf("ListRunners = %+v, %v; want the runner with one of its jobs", listed, err)
	}

	// Only a heartbeats: b's lease runs out, a's does not.
	deadline := time.Now().Add(5 * time.Second)
	for getJob(t, q, b).GetState() != vagrant.Job_ERROR {
		if time.Now().After(deadline) {
			t.Fatalf("job b without heartbeats is still %s", getJob(t, q, b).GetState())
		}
		if err := q.Heartbeat(ctx, a, "slots"); err != nil {
			t.Fatalf("Heartbeat a: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := getJob(t, q, a).GetState(); st != vagrant.Job_RUNNING {
		t.Fatalf("job a is %s after its sibling timed out, want RUNNING", st)
	}
	if err := q.Complete(ctx, a, "slots", nil); err != nil {
		t.Fatal(err)
	}
	if st := getJob(t, q, a).GetState(); st != vagrant.Job_SUCCESS {
		t.Fatalf("job a is %s after Complete", st)
	}
}
