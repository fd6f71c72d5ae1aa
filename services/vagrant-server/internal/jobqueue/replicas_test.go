package jobqueue_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// TestEveryJobRunsExactlyOnceAcrossReplicas: two replicas (two pools, two Queues, two
// reapers) on one schema, several runners on each, jobs queued through both while the
// runners work.
func TestEveryJobRunsExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	const jobs, runnersPerReplica = 400, 4
	db := testenv.DB(t)
	opts := jobqueue.Options{AckTimeout: 30 * time.Second, HeartbeatTimeout: 30 * time.Second, PollInterval: time.Minute}
	replicas := []*replica{openReplica(t, db.URL, opts), openReplica(t, db.URL, opts)}
	for _, r := range replicas {
		runReaper(t, r.q, 50*time.Millisecond)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()

	var mu sync.Mutex
	ranBy := map[string][]string{} // job id -> runners that completed it
	var wg sync.WaitGroup
	errs := make(chan error, 2*runnersPerReplica)
	for ri, r := range replicas {
		for n := range runnersPerReplica {
			id := fmt.Sprintf("runner-%d-%d", ri, n)
			register(t, r.q, id, false)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					job, err := r.q.Assign(ctx, id)
					if errors.Is(err, context.Canceled) {
						return
					}
					if err == nil {
						_, err = r.q.Ack(ctx, job.GetId(), id)
					}
					if err == nil {
						err = r.q.Complete(ctx, job.GetId(), id, nil)
					}
					if err != nil {
						errs <- fmt.Errorf("%s: %w", id, err)
						return
					}
					mu.Lock()
					ranBy[job.GetId()] = append(ranBy[job.GetId()], id)
					done := len(ranBy)
					mu.Unlock()
					if done == jobs {
						cancel()
					}
				}
			}()
		}
	}
	queued := make([]string, 0, jobs)
	for i := range jobs {
		queued = append(queued, mustQueue(t, replicas[i%2].q, noopJob(anyRunner()), 0))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(ranBy) != jobs {
		t.Fatalf("%d of %d jobs ran", len(ranBy), jobs)
	}
	perRunner := map[string]int{}
	for _, id := range queued {
		if len(ranBy[id]) != 1 {
			t.Fatalf("job %s ran %d times (%v)", id, len(ranBy[id]), ranBy[id])
		}
		perRunner[ranBy[id][0]]++
	}
	list, err := replicas[0].q.List(ctxT(t), jobqueue.Filter{States: []vagrant.Job_State{vagrant.Job_SUCCESS}})
	if err != nil || len(list) != jobs {
		t.Fatalf("List(SUCCESS) = %d jobs, %v", len(list), err)
	}
	if len(jobEvents(t, replicas[0].pool, queued[0])) != 4 {
		t.Fatal("want exactly four events per job")
	}
	t.Logf("jobs per runner: %v", perRunner)
}

// TestBlockedAssignWakesOnNotify: a runner waiting on one replica gets a job queued through
// the other at once, although its poll interval is a minute.
func TestBlockedAssignWakesOnNotify(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	a, b := openReplica(t, db.URL, fastOptions()), openReplica(t, db.URL, fastOptions())
	register(t, a.q, "waiting", false)
	register(t, a.q, "local", true)
	got := make(chan *vagrant.Job, 2)
	for _, runner := range []string{"waiting", "local"} {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			job, err := a.q.Assign(ctx, runner)
			if err != nil {
				t.Errorf("Assign(%s): %v", runner, err)
			}
			got <- job
		}()
	}
	time.Sleep(200 * time.Millisecond) // both are blocked by now
	start := time.Now()
	anyID := mustQueue(t, b.q, noopJob(anyRunner()), 0)
	localID := mustQueue(t, b.q, noopJob(runnerID("local")), 0)
	for range 2 {
		select {
		case j := <-got:
			want := anyID
			if j.GetAssignedRunner().GetId() == "local" {
				want = localID
			}
			if j.GetId() != want {
				t.Fatalf("%s got %s, want %s", j.GetAssignedRunner().GetId(), j.GetId(), want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("blocked Assign was not woken by the queued job")
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("wake-up took %s", d)
	}
}

func TestAssignmentHonoursByIDOnlyAndComponents(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q := openReplica(t, db.URL, fastOptions()).q
	register(t, q, "local", true)
	register(t, q, "cmd-only", false, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "builtin"})
	register(t, q, "full", false, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "builtin"},
		&vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "netns"})
	up := &vagrant.Job{TargetRunner: anyRunner(), Scope: &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "t1"}},
		Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up"}}}
	upID := mustQueue(t, q, up, 0)
	anyID := mustQueue(t, q, noopJob(anyRunner()), 0)

	assertNoAssignment(t, q, "local", 300*time.Millisecond) // by_id_only: not an any-runner job
	if j := assignWithin(t, q, "cmd-only", 5*time.Second); j.GetId() != anyID {
		t.Fatalf("cmd-only got %s, want the noop %s (it has no provider for the up)", j.GetId(), anyID)
	}
	assertNoAssignment(t, q, "cmd-only", 300*time.Millisecond)
	if j := assignWithin(t, q, "full", 5*time.Second); j.GetId() != upID {
		t.Fatalf("full got %s, want %s", j.GetId(), upID)
	}
	localID := mustQueue(t, q, noopJob(runnerID("local")), 0)
	if j := assignWithin(t, q, "local", 5*time.Second); j.GetId() != localID {
		t.Fatalf("local got %s, want %s", j.GetId(), localID)
	}
}

// TestListenerRecoversFromALostConnection kills the LISTEN connection: the replica
// reconnects and wakes its blocked Assign calls, so a job queued meanwhile is not stranded.
func TestListenerRecoversFromALostConnection(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	app := testenv.UniqueName(t, "jq")
	qs := u.Query()
	qs.Set("application_name", app)
	u.RawQuery = qs.Encode()
	r := openReplica(t, u.String(), fastOptions())
	register(t, r.q, "r1", false)
	got := assignLater(t, r.q, "r1")
	time.Sleep(100 * time.Millisecond)
	tag, err := db.Pool.Exec(ctxT(t), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminate the listener: %v (%d rows)", err, tag.RowsAffected())
	}
	// Queued through the pool directly while no connection listens.
	id := mustQueue(t, r.q, noopJob(anyRunner()), 0)
	expectAssigned(t, got, id, "Assign stayed blocked after the listener's connection was lost")
}

// TestMixedRunnersNeverStrandAJob: runners of different kinds (by_id_only, missing a
// provider, claiming no components) on two replicas and a mix of jobs only some can take.
// Each queued job wakes one fitting runner, so this checks that no job is left waiting for
// the poll (set to a minute): all must finish within seconds.
func TestMixedRunnersNeverStrandAJob(t *testing.T) {
	t.Parallel()
	const jobs = 300
	db := testenv.DB(t)
	opts := jobqueue.Options{AckTimeout: time.Minute, HeartbeatTimeout: time.Minute, PollInterval: time.Minute}
	replicas := []*replica{openReplica(t, db.URL, opts), openReplica(t, db.URL, opts)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "builtin"}
	provider := &vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "netns"}
	var mu sync.Mutex
	ran := map[string]int{}
	var wg sync.WaitGroup
	for ri, r := range replicas {
		kinds := map[string][]*vagrant.Component{"cmd": {cmd}, "full": {cmd, provider}, "plain": nil}
		for kind, comps := range kinds {
			id := fmt.Sprintf("%s-%d", kind, ri)
			register(t, r.q, id, false, comps...)
			wg.Add(1)
			go func() { defer wg.Done(); work(ctx, t, r.q, id, &mu, ran) }()
		}
		local := fmt.Sprintf("local-%d", ri)
		register(t, r.q, local, true)
		wg.Add(1)
		go func() { defer wg.Done(); work(ctx, t, r.q, local, &mu, ran) }()
	}
	up := func() *vagrant.Job {
		return &vagrant.Job{TargetRunner: anyRunner(), Scope: &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "t"}},
			Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up"}}}
	}
	for i := range jobs {
		job := noopJob(anyRunner())
		switch i % 4 {
		case 1:
			job = up()
		case 2:
			job = noopJob(runnerID(fmt.Sprintf("local-%d", i%3%2)))
		}
		mustQueue(t, replicas[i%2].q, job, 0)
	}
	for {
		mu.Lock()
		n := len(ran)
		mu.Unlock()
		if n == jobs || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if len(ran) != jobs {
		t.Fatalf("%d of %d jobs ran within 30s; the rest were stranded", len(ran), jobs)
	}
	for id, n := range ran {
		if n != 1 {
			t.Fatalf("job %s ran %d times", id, n)
		}
	}
}

// work runs jobs on runner until ctx ends, counting them in ran.
func work(ctx context.Context, t *testing.T, q *jobqueue.Queue, runner string, mu *sync.Mutex, ran map[string]int) {
	for {
		job, err := q.Assign(ctx, runner)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			_, err = q.Ack(ctx, job.GetId(), runner)
		}
		if err == nil {
			err = q.Complete(ctx, job.GetId(), runner, nil)
		}
		if err != nil {
			t.Errorf("%s: %v", runner, err)
			return
		}
		mu.Lock()
		ran[job.GetId()]++
		mu.Unlock()
	}
}

// Runner ids are client text of any length: none reaches a NOTIFY payload (8000 bytes at
// most), so a long one neither fails the job's changes nor stops the job from being woken.
func TestLongRunnerIDNeverReachesANotification(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q := openReplica(t, db.URL, jobqueue.Options{PollInterval: time.Minute}).q
	long := strings.Repeat("r", 9000)
	register(t, q, long, true)
	got := assignLater(t, q, long)
	time.Sleep(100 * time.Millisecond) // the runner waits: the job must wake it
	other := openReplica(t, db.URL, jobqueue.Options{PollInterval: time.Minute}).q
	id := mustQueue(t, other, noopJob(runnerID(long)), 0)
	expectAssigned(t, got, id, "a runner with a long id was not woken for its job")
	if _, err := q.Ack(ctxT(t), id, long); err != nil {
		t.Fatal(err)
	}
}
