package jobqueue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// runOne queues a noop and runs it to SUCCESS on runner.
func runOne(t *testing.T, q *jobqueue.Queue, runner string) string {
	t.Helper()
	ctx := context.Background()
	id := mustQueue(t, q, noopJob(runnerID(runner)), 0)
	assignWithin(t, q, runner, 5*time.Second)
	if _, err := q.Ack(ctx, id, runner); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, id, runner, nil); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestPruneOldJobsKeepsTheNewestCompleted(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, fastOptions()).q, ctxT(t)
	register(t, q, "r1", false)
	var done []string
	for range 5 {
		done = append(done, runOne(t, q, "r1"))
	}
	canceled := mustQueue(t, q, noopJob(runnerID("nobody")), 0)
	if err := q.Cancel(ctx, canceled, false); err != nil { // newest finished job (ERROR)
		t.Fatal(err)
	}
	pending := mustQueue(t, q, noopJob(runnerID("nobody")), 0)

	n, err := q.PruneOldJobs(ctx, 3)
	if err != nil || n != 3 {
		t.Fatalf("PruneOldJobs = %d, %v; want 3 deleted", n, err)
	}
	jobs, err := q.List(ctx, jobqueue.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.GetId())
	}
	want := []string{done[3], done[4], canceled, pending}
	if !slices.Equal(ids, want) {
		t.Fatalf("kept %v, want the 3 newest finished and the queued one %v", ids, want)
	}
	if n, err := q.PruneOldJobs(ctx, 0); err != nil || n != 3 {
		t.Fatalf("PruneOldJobs(0) = %d, %v", n, err)
	}
	if _, err := q.PruneOldJobs(ctx, -1); err == nil {
		t.Fatal("negative keep accepted")
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, fastOptions()).q, ctxT(t)
	register(t, q, "r1", false)
	register(t, q, "r2", false)
	a := runOne(t, q, "r1")
	b := runOne(t, q, "r2")
	c := mustQueue(t, q, noopJob(runnerID("nobody")), 0)
	check := func(f jobqueue.Filter, want ...string) {
		t.Helper()
		jobs, err := q.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.GetId())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List(%+v) = %v, want %v", f, got, want)
		}
	}
	check(jobqueue.Filter{}, a, b, c)
	check(jobqueue.Filter{States: []vagrant.Job_State{vagrant.Job_QUEUED}}, c)
	check(jobqueue.Filter{AssignedRunner: "r2"}, b)
	check(jobqueue.Filter{Limit: 2}, a, b)
	check(jobqueue.Filter{Limit: 2, NewestFirst: true}, c, b)
}

func TestRunnerRegistrationSessions(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, fastOptions())
	q, ctx := r.q, ctxT(t)
	comps := []*vagrant.Component{{Type: vagrant.Component_PROVIDER, Name: "netns"}}
	first := register(t, q, "r1", false, comps...)
	second := register(t, q, "r1", true, comps...) // reconnected, maybe to another replica
	if second <= first {
		t.Fatalf("sessions %d then %d", first, second)
	}
	if err := q.RunnerOffline(ctx, "r1", first); err != nil { // the old stream ends late
		t.Fatal(err)
	}
	info, err := q.GetRunner(ctx, "r1")
	if err != nil || !info.Online || !info.Runner.GetByIdOnly() || len(info.Runner.GetComponents()) != 1 {
		t.Fatalf("GetRunner = %+v, %v; want the newer registration, online", info, err)
	}
	if err := q.RunnerOffline(ctx, "r1", second); err != nil {
		t.Fatal(err)
	}
	if info, _ := q.GetRunner(ctx, "r1"); info.Online {
		t.Fatal("runner still online after its stream ended")
	}
	if _, err := q.RegisterRunner(ctx, &vagrant.Runner{}, "token:test"); err == nil {
		t.Fatal("runner without id accepted")
	}

	var online []bool
	for _, ev := range runnerEvents(t, r.pool, "r1") {
		if !slices.Equal(ev.GetComponents(), []string{"PROVIDER", "PROVIDER:netns"}) {
			t.Fatalf("event components = %v", ev.GetComponents())
		}
		online = append(online, ev.GetOnline())
	}
	if !slices.Equal(online, []bool{true, true, false}) {
		t.Fatalf("runner events online = %v; want two registrations and one offline", online)
	}
}
