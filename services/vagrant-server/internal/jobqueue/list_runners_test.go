package jobqueue_test

import (
	"fmt"
	"testing"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// ListRunners pages through every registered runner by id, with its registration, whether
// it is online and the job it holds (assigned, then running; none once finished).
func TestListRunners(t *testing.T) {
	t.Parallel()
	r := openReplica(t, testenv.DB(t).URL, fastOptions())
	ctx := ctxT(t)
	for i := range 5 {
		register(t, r.q, fmt.Sprintf("runner-%d", i), i == 1,
			&vagrant.Component{Type: vagrant.Component_COMMAND, Name: "up"})
	}
	gone := register(t, r.q, "runner-5", false)
	if err := r.q.RunnerOffline(ctx, "runner-5", gone); err != nil {
		t.Fatal(err)
	}
	jobID, err := r.q.Queue(ctx, noopJob(runnerID("runner-2")), 0, "token:test")
	if err != nil {
		t.Fatal(err)
	}
	if j, err := r.q.Assign(ctx, "runner-2"); err != nil || j.GetId() != jobID {
		t.Fatalf("Assign = %v, %v; want %s", j, err, jobID)
	}

	var all []jobqueue.ListedRunner
	after := ""
	for pages := 0; ; pages++ {
		page, err := r.q.ListRunners(ctx, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 4 {
			t.Fatalf("page of %d runners; limit 4", len(page))
		}
		all = append(all, page...)
		if len(page) < 4 {
			if pages != 1 {
				t.Fatalf("6 runners in pages of 4 took %d pages", pages+1)
			}
			break
		}
		after = page[len(page)-1].Runner.GetId()
	}
	if len(all) != 6 {
		t.Fatalf("listed %d runners; want 6", len(all))
	}
	for i, lr := range all {
		if want := fmt.Sprintf("runner-%d", i); lr.Runner.GetId() != want {
			t.Fatalf("runner %d is %s; want %s (ordered by id)", i, lr.Runner.GetId(), want)
		}
		if lr.Online != (i != 5) {
			t.Errorf("%s online = %v", lr.Runner.GetId(), lr.Online)
		}
		if lr.LastSeen.Before(lr.FirstSeen) || lr.FirstSeen.IsZero() {
			t.Errorf("%s first seen %v, last seen %v", lr.Runner.GetId(), lr.FirstSeen, lr.LastSeen)
		}
	}
	if !all[1].Runner.GetByIdOnly() || all[0].Runner.GetByIdOnly() {
		t.Error("by_id_only not as registered")
	}
	if c := all[0].Runner.GetComponents(); len(c) != 1 || c[0].GetName() != "up" || c[0].GetType() != vagrant.Component_COMMAND {
		t.Errorf("components = %v; want COMMAND up", c)
	}
	held := func() *jobqueue.HeldJob {
		t.Helper()
		page, err := r.q.ListRunners(ctx, "runner-1", 1)
		if err != nil || len(page) != 1 || page[0].Runner.GetId() != "runner-2" {
			t.Fatalf("ListRunners(after runner-1, 1) = %v, %v", page, err)
		}
		return page[0].Job
	}
	if j := held(); j == nil || j.ID != jobID || j.State != vagrant.Job_WAITING || j.Operation != "noop" || j.AssignTime.IsZero() {
		t.Fatalf("runner-2 holds %+v; want the assigned noop job %s", j, jobID)
	}
	for _, lr := range all {
		if lr.Runner.GetId() != "runner-2" && lr.Job != nil {
			t.Errorf("%s holds %+v; it was assigned nothing", lr.Runner.GetId(), lr.Job)
		}
	}
	if _, err := r.q.Ack(ctx, jobID, "runner-2"); err != nil {
		t.Fatal(err)
	}
	if j := held(); j == nil || j.State != vagrant.Job_RUNNING {
		t.Fatalf("after ack runner-2 holds %+v; want it RUNNING", j)
	}
	if err := r.q.Complete(ctx, jobID, "runner-2", &vagrant.Job_Result{}); err != nil {
		t.Fatal(err)
	}
	if j := held(); j != nil {
		t.Fatalf("after complete runner-2 holds %+v; want none", j)
	}
	if _, err := r.q.ListRunners(ctx, "", 0); err == nil {
		t.Fatal("ListRunners with limit 0 succeeded")
	}
}
