package app_test

import (
	"slices"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// CancelJob in every state: queued ends at once; waiting and running reach the runner as
// JobCancel{force: false} and end when it reports; finished is left alone.
func TestCancelInEachState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	r := startRunner(t, c, tok, "runner-1", false)
	cancelJob := func(id string) {
		t.Helper()
		must(c.CancelJob(ctx, &vagrant.CancelJobRequest{JobId: id}))(t)
	}

	queued := queue(t, c, ctx, noopJob())
	cancelJob(queued)
	job := waitJob(t, c, ctx, queued, vagrant.Job_ERROR, time.Second)
	if job.GetError().GetCode() != int32(codes.Canceled) || job.GetCancelTime() == nil || job.GetAssignedRunner() != nil {
		t.Fatalf("canceled queued job: %v", job)
	}

	// Waiting: the runner has the assignment but has not acknowledged it.
	waiting := queue(t, c, ctx, noopJob())
	s := r.take(t, 10*time.Second)
	if s.job.GetId() != waiting {
		t.Fatalf("runner got %s, want %s (the canceled queued job must never be handed out)", s.job.GetId(), waiting)
	}
	js := openJobStream(t, c, ctx, waiting)
	js.next(t, 5*time.Second) // open
	js.next(t, 5*time.Second) // state WAITING
	cancelJob(waiting)
	if got := summary([]*vagrant.GetJobStreamResponse{js.next(t, 5*time.Second)}); got[0] != "state WAITING→WAITING canceling" {
		t.Fatalf("job stream after the cancel request: %v", got)
	}
	if force := s.expectCancel(5 * time.Second); force {
		t.Fatal("a requested cancel arrived forced")
	}
	s.fail(&spb.Status{Code: int32(codes.Canceled), Message: "runner dropped the job"})
	s.wantEnd(nil)
	if got := summary(js.rest(t, 10*time.Second)); !slices.Equal(got, []string{"state WAITING→ERROR canceling", "complete 1"}) {
		t.Fatalf("end of the job stream of the canceled waiting job: %v", got)
	}
	job = waitJob(t, c, ctx, waiting, vagrant.Job_ERROR, time.Second)
	if job.GetError().GetCode() != int32(codes.Canceled) {
		t.Fatalf("canceled waiting job: %v", job)
	}

	running := queue(t, c, ctx, noopJob())
	s = r.take(t, 10*time.Second)
	s.ack()
	waitJob(t, c, ctx, running, vagrant.Job_RUNNING, 5*time.Second)
	s.output("working")
	cancelJob(running)
	if force := s.expectCancel(5 * time.Second); force {
		t.Fatal("a requested cancel arrived forced")
	}
	cancelJob(running) // a second request changes nothing and sends nothing
	s.heartbeat()      // still the runner's job until it reports
	s.fail(&spb.Status{Code: int32(codes.Canceled), Message: "stopped on request"})
	s.wantEnd(nil)
	job = waitJob(t, c, ctx, running, vagrant.Job_ERROR, time.Second)
	if job.GetError().GetMessage() != "stopped on request" || job.GetCancelTime() == nil {
		t.Fatalf("canceled running job: %v", job)
	}
	if got := summary(openJobStream(t, c, ctx, running).rest(t, 10*time.Second)); got[2] != "output[b] working" {
		t.Fatalf("output of the canceled job: %v", got)
	}

	queue(t, c, ctx, noopJob())
	done := r.run(t, 10*time.Second)
	cancelJob(done.GetId())
	if job := must(c.GetJob(ctx, &vagrant.GetJobRequest{JobId: done.GetId()}))(t); job.GetState() != vagrant.Job_SUCCESS || job.GetCancelTime() != nil {
		t.Fatalf("cancel changed a finished job: %v", job)
	}
	_, err := c.CancelJob(ctx, &vagrant.CancelJobRequest{JobId: "01J0000000000000000000NOPE"})
	code(t, "cancel an unknown job", err, codes.NotFound)
	_, err = c.CancelJob(ctx, &vagrant.CancelJobRequest{})
	code(t, "cancel without id", err, codes.InvalidArgument, "job_id")
}

// A runner that stops heartbeating loses its job: ERROR (UNAVAILABLE), and the runner, if
// still there, is told to stop with JobCancel{force: true}. One that keeps beating outlives
// the timeout.
func TestRunnerThatStopsHeartbeatingFailsItsJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_JOB_HEARTBEAT_TIMEOUT=800ms", "PLINTH_VAGRANT_JOB_REAP_INTERVAL=100ms")
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	silent, beating := startRunner(t, c, tok, "silent", false), startRunner(t, c, tok, "beating", false)

	lost := queue(t, c, ctx, noopJob())
	s := silent.take(t, 10*time.Second)
	s.ack()
	s.output("about to hang")
	if force := s.expectCancel(10 * time.Second); !force {
		t.Fatal("heartbeat timeout: JobCancel is not forced")
	}
	s.wantEnd(nil)
	job := waitJob(t, c, ctx, lost, vagrant.Job_ERROR, time.Second)
	if job.GetError().GetCode() != int32(codes.Unavailable) {
		t.Fatalf("job of a silent runner: %v", job.GetError())
	}

	kept := queue(t, c, ctx, noopJob())
	b := beating.take(t, 10*time.Second)
	b.ack()
	for range 10 { // 2s: well past the timeout
		time.Sleep(200 * time.Millisecond)
		b.heartbeat()
	}
	b.complete(nil)
	waitJob(t, c, ctx, kept, vagrant.Job_SUCCESS, time.Second)
}

// An assignment goes back to the queue when its runner refuses it, disappears before
// acknowledging, or stays silent past the ack timeout; another runner then runs it.
func TestUnacknowledgedJobsGoBackToTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_JOB_ACK_TIMEOUT=1500ms", "PLINTH_VAGRANT_JOB_REAP_INTERVAL=100ms")
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	r := startRunner(t, c, tok, "flaky", false)
	id := queue(t, c, ctx, noopJob())

	s := r.take(t, 10*time.Second)
	s.fail(&spb.Status{Code: int32(codes.ResourceExhausted), Message: "busy"})
	s.wantEnd(nil)
	waitJob(t, c, ctx, id, vagrant.Job_QUEUED, 5*time.Second)

	s = r.take(t, 10*time.Second)
	s.cancel() // the runner vanishes: the job is back well before its ack deadline
	waitJob(t, c, ctx, id, vagrant.Job_QUEUED, time.Second)

	s = r.take(t, 10*time.Second) // and now stays silent past the ack timeout
	s.wantEndCode(codes.FailedPrecondition, "no longer this runner's")
	other := startRunner(t, c, tok, "steady", false)
	if ran := other.run(t, 10*time.Second); ran.GetId() != id {
		t.Fatalf("the other runner got %s, want %s", ran.GetId(), id)
	}
}

// A job nobody acknowledges within expires_in fails with DEADLINE_EXCEEDED.
func TestQueuedJobExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_JOB_REAP_INTERVAL=100ms")
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))
	resp := must(c.QueueJob(ctx, &vagrant.QueueJobRequest{Job: noopJob(), ExpiresIn: "300ms"}))(t)
	job := waitJob(t, c, ctx, resp.GetJobId(), vagrant.Job_ERROR, 5*time.Second)
	if job.GetError().GetCode() != int32(codes.DeadlineExceeded) || job.GetExpireTime() == nil {
		t.Fatalf("expired job: %v", job)
	}
}
