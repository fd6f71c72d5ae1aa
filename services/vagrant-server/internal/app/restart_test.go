package app_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// A server restarted with jobs queued, waiting and running loses none of them: at shutdown
// the waiting job goes back to the queue (its runner's stream ends with Unavailable), the
// running one may finish until the shutdown timeout and, cut off, fails at its heartbeat
// deadline enforced by the restarted server; queued jobs simply wait.
func TestRestartWithJobsInEveryState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_SHUTDOWN_TIMEOUT=2s", "PLINTH_VAGRANT_JOB_HEARTBEAT_TIMEOUT=1s", "PLINTH_VAGRANT_JOB_REAP_INTERVAL=100ms")
	c, stop := e.startStoppable(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	runs, waits := startRunner(t, c, tok, "runs", false), startRunner(t, c, tok, "waits", false)
	running := queue(t, c, ctx, noopJob())
	sr := runs.take(t, 10*time.Second)
	sr.ack()
	sr.output("before the restart")
	waitJob(t, c, ctx, running, vagrant.Job_RUNNING, 5*time.Second)
	waiting := queue(t, c, ctx, noopJob())
	sw := waits.take(t, 10*time.Second)
	queued := queue(t, c, ctx, noopJob())
	follower := openJobStream(t, c, ctx, queued)

	stop()
	sw.wantEndCode(codes.Unavailable, "shutting down")
	for range follower.msgs { // open, state QUEUED
	}
	code(t, "job stream at shutdown", <-follower.end, codes.Unavailable, "shutting down")
	select {
	case <-sr.end: // cut off at the shutdown timeout
	case <-time.After(10 * time.Second):
		t.Fatal("the running job's stream outlived the server")
	}

	c2 := e.start(t)
	if job := waitJob(t, c2, ctx, waiting, vagrant.Job_QUEUED, time.Second); job.GetAssignedRunner() != nil {
		t.Fatalf("job given back at shutdown: %v", job)
	}
	lost := waitJob(t, c2, ctx, running, vagrant.Job_ERROR, 10*time.Second)
	if lost.GetError().GetCode() != int32(codes.Unavailable) {
		t.Fatalf("running job cut off by the restart: %v", lost.GetError())
	}
	got := summary(openJobStream(t, c2, ctx, running).rest(t, 10*time.Second))
	if diff := cmp.Diff([]string{"open", "state UNKNOWN→ERROR canceling", "output[b] before the restart", "complete 14"}, got); diff != "" {
		t.Fatalf("stream of the job cut off by the restart (-want +got):\n%s", diff)
	}
	fresh := startRunner(t, c2, tok, "fresh", false)
	for _, want := range []string{waiting, queued} {
		if ran := fresh.run(t, 10*time.Second); ran.GetId() != want {
			t.Fatalf("after the restart the runner got %s, want %s", ran.GetId(), want)
		}
	}
}
