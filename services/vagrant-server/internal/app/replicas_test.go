package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Two server replicas on one database, runners on both, jobs queued through both: every job
// runs exactly once, on the runner it was assigned to, and ends SUCCESS.
func TestTwoReplicasRunEveryJobExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	replicas := []vagrant.VagrantClient{e.start(t), e.start(t)}
	tok := e.bootstrap(t, replicas[0])
	ctx := call(t, tok)

	const runners, jobs = 6, 60
	var mu sync.Mutex
	ranBy := map[string][]string{} // job id → runners that ran it
	finished := make(chan struct{}, jobs*2)
	work, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range runners {
		r := startRunner(t, replicas[i%2], tok, fmt.Sprintf("runner-%d", i), false)
		wg.Go(func() {
			err := r.work(work, func(job *vagrant.Job, _ time.Time) {
				mu.Lock()
				ranBy[job.GetId()] = append(ranBy[job.GetId()], r.id)
				mu.Unlock()
				finished <- struct{}{}
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	queued := map[string]bool{}
	began := time.Now()
	defer func() { t.Logf("%d jobs in %s", jobs, time.Since(began)) }()
	for i := range jobs {
		queued[queue(t, replicas[i%2], ctx, noopJob())] = true
	}
	for range jobs {
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			mu.Lock()
			t.Fatalf("only %d of %d jobs ran", len(ranBy), jobs)
		}
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(ranBy) != jobs {
		t.Fatalf("%d distinct jobs ran, want %d", len(ranBy), jobs)
	}
	used := map[string]bool{}
	for id, by := range ranBy {
		if !queued[id] || len(by) != 1 {
			t.Fatalf("job %s ran on %v (queued here: %v)", id, by, queued[id])
		}
		job := must(replicas[1].GetJob(ctx, &vagrant.GetJobRequest{JobId: id}))(t)
		if job.GetState() != vagrant.Job_SUCCESS || job.GetAssignedRunner().GetId() != by[0] {
			t.Fatalf("job %s: %s on %s, ran by %s", id, job.GetState(), job.GetAssignedRunner().GetId(), by[0])
		}
		used[by[0]] = true
	}
	if len(used) < 2 {
		t.Errorf("only %v took jobs: the work was not shared", used)
	}
}
