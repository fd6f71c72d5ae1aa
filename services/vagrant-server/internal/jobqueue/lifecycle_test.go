package jobqueue_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

func TestJobRunsThroughEveryStateWithTimesAndEvents(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, jobqueue.Options{})
	q, ctx := r.q, ctxT(t)
	register(t, q, "r1", false)
	job := noopJob(anyRunner())
	job.Labels = map[string]string{"env": "test"}
	job.State = vagrant.Job_SUCCESS // server-side fields from the client are ignored
	id := mustQueue(t, q, job, time.Hour)

	j := getJob(t, q, id)
	if j.GetState() != vagrant.Job_QUEUED || j.GetQueueTime() == nil || j.GetExpireTime() == nil ||
		j.GetLabels()["env"] != "test" || j.GetAssignedRunner() != nil {
		t.Fatalf("queued job = %v", j)
	}
	if got := j.GetExpireTime().AsTime().Sub(j.GetQueueTime().AsTime()); got != time.Hour {
		t.Fatalf("expire_time - queue_time = %s, want 1h", got)
	}

	a := assignWithin(t, q, "r1", 5*time.Second)
	if a.GetId() != id || a.GetState() != vagrant.Job_WAITING || a.GetAssignedRunner().GetId() != "r1" || a.GetAssignTime() == nil {
		t.Fatalf("assigned job = %v", a)
	}
	if _, err := q.Ack(ctx, id, "r1"); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := q.Heartbeat(ctx, id, "r1"); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	result := &vagrant.Job_Result{Validate: &vagrant.Job_ValidateResult{}}
	if err := q.Complete(ctx, id, "r1", result); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	j = getJob(t, q, id)
	if j.GetState() != vagrant.Job_SUCCESS || j.GetAckTime() == nil || j.GetCompleteTime() == nil ||
		j.GetResult().GetValidate() == nil || j.GetError() != nil || j.GetCancelTime() != nil {
		t.Fatalf("completed job = %v", j)
	}
	want := []eventsv1.JobState{eventsv1.JobState_JOB_STATE_QUEUED, eventsv1.JobState_JOB_STATE_WAITING,
		eventsv1.JobState_JOB_STATE_RUNNING, eventsv1.JobState_JOB_STATE_SUCCESS}
	evs := jobEvents(t, r.pool, id)
	if got := eventStates(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v (one per transition, none for the heartbeat)", got, want)
	}
	if evs[1].GetPreviousState() != eventsv1.JobState_JOB_STATE_QUEUED || evs[3].GetAssignedRunner() != "r1" || evs[3].GetOperation() != "noop" {
		t.Fatalf("event fields: %v", evs)
	}

	// The runner is done with it: nothing more may happen to the job.
	var se *jobqueue.StateError
	if err := q.Complete(ctx, id, "r1", nil); !errors.As(err, &se) || !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("second Complete = %v; want a StateError", err)
	}
}

func TestFailStoresTheRunnersError(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, jobqueue.Options{})
	q, ctx := r.q, ctxT(t)
	register(t, q, "r1", false)
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	assignWithin(t, q, "r1", 5*time.Second)
	if err := q.Fail(ctx, id, "r1", &spb.Status{Code: 5, Message: "boom"}); !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("Fail before Ack = %v; want ErrWrongState (a runner nacks instead)", err)
	}
	if _, err := q.Ack(ctx, id, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Fail(ctx, id, "r1", &spb.Status{Code: int32(codes.NotFound), Message: "no Vagrantfile"}); err != nil {
		t.Fatalf("Fail: %v", err)
	}
	j := getJob(t, q, id)
	if j.GetState() != vagrant.Job_ERROR || j.GetError().GetCode() != int32(codes.NotFound) || j.GetError().GetMessage() != "no Vagrantfile" {
		t.Fatalf("failed job = %v", j)
	}
	evs := jobEvents(t, r.pool, id)
	if last := evs[len(evs)-1]; last.GetErrorCode() != int32(codes.NotFound) || last.GetErrorMessage() != "no Vagrantfile" {
		t.Fatalf("last event = %v", last)
	}
}

func TestOnlyTheAssignedRunnerActsOnAJob(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, jobqueue.Options{}).q, ctxT(t)
	register(t, q, "r1", false)
	register(t, q, "r2", false)
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	assignWithin(t, q, "r1", 5*time.Second)
	var se *jobqueue.StateError
	if _, err := q.Ack(ctx, id, "r2"); !errors.As(err, &se) || se.Runner != "r1" {
		t.Fatalf("Ack by another runner = %v; want StateError naming r1", err)
	}
	if err := q.Complete(ctx, id, "r1", nil); !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("Complete before Ack = %v", err)
	}
	if _, err := q.Ack(ctx, "01NOSUCHJOB", "r1"); !errors.Is(err, jobqueue.ErrJobNotFound) {
		t.Fatalf("Ack of unknown job = %v", err)
	}
	if _, err := q.Assign(ctx, "stranger"); !errors.Is(err, jobqueue.ErrRunnerNotFound) {
		t.Fatalf("Assign to unregistered runner = %v", err)
	}
}

func TestNackReturnsTheJobToTheQueue(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, fastOptions())
	q, ctx := r.q, ctxT(t)
	register(t, q, "r1", false)
	register(t, q, "r2", false)
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	assignWithin(t, q, "r1", 5*time.Second)
	if err := q.Nack(ctx, id, "r1"); err != nil {
		t.Fatalf("Nack: %v", err)
	}
	j := getJob(t, q, id)
	if j.GetState() != vagrant.Job_QUEUED || j.GetAssignedRunner() != nil || j.GetAssignTime() != nil || j.GetCancelTime() != nil {
		t.Fatalf("nacked job = %v", j)
	}
	// No stray cancel: well past the ack timeout the job is still queued, then runs.
	time.Sleep(2 * fastOptions().AckTimeout)
	if got := getJob(t, q, id).GetState(); got != vagrant.Job_QUEUED {
		t.Fatalf("nacked job later = %s", got)
	}
	if a := assignWithin(t, q, "r2", 5*time.Second); a.GetId() != id {
		t.Fatalf("r2 got %s", a.GetId())
	}
	if _, err := q.Ack(ctx, id, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, id, "r2", nil); err != nil {
		t.Fatal(err)
	}
}

func TestAckTimeoutRequeues(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, fastOptions())
	q, ctx := r.q, ctxT(t)
	runReaper(t, q, 50*time.Millisecond)
	register(t, q, "silent", false)
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	assignWithin(t, q, "silent", 5*time.Second)
	waitState(t, q, id, vagrant.Job_QUEUED, 5*time.Second)
	// The silent runner's late ack is refused: the job is no longer its.
	if _, err := q.Ack(ctx, id, "silent"); !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("late Ack = %v", err)
	}
	got := eventStates(jobEvents(t, r.pool, id))
	want := []eventsv1.JobState{eventsv1.JobState_JOB_STATE_QUEUED, eventsv1.JobState_JOB_STATE_WAITING, eventsv1.JobState_JOB_STATE_QUEUED}
	if !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestRunnerDyingMidJobEndsItAtTheHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, fastOptions()).q, ctxT(t)
	runReaper(t, q, 50*time.Millisecond)
	register(t, q, "mortal", false)
	id := mustQueue(t, q, noopJob(anyRunner()), 0)
	assignWithin(t, q, "mortal", 5*time.Second)
	if _, err := q.Ack(ctx, id, "mortal"); err != nil {
		t.Fatal(err)
	}
	w, err := q.Watch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Alive: heartbeats keep it running well past one timeout.
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		if err := q.Heartbeat(ctx, id, "mortal"); err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
	}
	if got := getJob(t, q, id).GetState(); got != vagrant.Job_RUNNING {
		t.Fatalf("heartbeating job = %s", got)
	}
	// Dead: no more heartbeats.
	c := waitChange(t, w, 5*time.Second, func(c jobqueue.Change) bool { return c.State == vagrant.Job_ERROR })
	if !c.CancelForced {
		t.Fatalf("change = %+v; want the runner told to stop (forced)", c)
	}
	j := getJob(t, q, id)
	if j.GetError().GetCode() != int32(codes.Unavailable) || j.GetCompleteTime() == nil {
		t.Fatalf("job after heartbeat timeout = %v", j)
	}
	if err := q.Heartbeat(ctx, id, "mortal"); !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("Heartbeat after timeout = %v; want ErrWrongState so the runner stops", err)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, fastOptions()).q, ctxT(t)
	register(t, q, "r1", false)

	// Expired but not yet reaped: never handed out.
	stale := mustQueue(t, q, noopJob(anyRunner()), 100*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	assertNoAssignment(t, q, "r1", 300*time.Millisecond)

	// Assigned but not acknowledged in time: the ack is refused and the job ends.
	late := mustQueue(t, q, noopJob(anyRunner()), 200*time.Millisecond)
	assignWithin(t, q, "r1", 5*time.Second)
	time.Sleep(250 * time.Millisecond)
	if _, err := q.Ack(ctx, late, "r1"); !errors.Is(err, jobqueue.ErrWrongState) {
		t.Fatalf("Ack after expiry = %v", err)
	}

	// The reaper ends expired queued jobs.
	reaped, err := jobqueue.NewReaper(q, 0).Reap(ctx)
	if err != nil || reaped.Expired != 1 {
		t.Fatalf("Reap = %+v, %v; want one expired job", reaped, err)
	}
	for _, id := range []string{stale, late} {
		j := getJob(t, q, id)
		if j.GetState() != vagrant.Job_ERROR || j.GetError().GetCode() != int32(codes.DeadlineExceeded) {
			t.Fatalf("expired job %s = %v", id, j)
		}
	}

	// A job acknowledged before its expiry runs to the end regardless.
	ok := mustQueue(t, q, noopJob(anyRunner()), 300*time.Millisecond)
	assignWithin(t, q, "r1", 5*time.Second)
	if _, err := q.Ack(ctx, ok, "r1"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // past the expiry, heartbeating
		time.Sleep(200 * time.Millisecond)
		if err := q.Heartbeat(ctx, ok, "r1"); err != nil {
			t.Fatal(err)
		}
	}
	if reaped, err := jobqueue.NewReaper(q, 0).Reap(ctx); err != nil || reaped != (jobqueue.Reaped{}) {
		t.Fatalf("Reap = %+v, %v; want nothing to do", reaped, err)
	}
	if err := q.Complete(ctx, ok, "r1", nil); err != nil {
		t.Fatalf("Complete of a job acked in time: %v", err)
	}
}

// Any positive expires_in is an expiry, also one shorter than the database's microsecond.
func TestSubMicrosecondExpiryExpires(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q, ctx := openReplica(t, db.URL, fastOptions()).q, ctxT(t)
	for _, d := range []time.Duration{time.Nanosecond, 999 * time.Nanosecond} {
		id := mustQueue(t, q, noopJob(runnerID("nobody")), d)
		if j := getJob(t, q, id); j.GetExpireTime() == nil {
			t.Fatalf("job queued with expires_in %s has no expiry", d)
		}
	}
	time.Sleep(time.Millisecond)
	if reaped, err := jobqueue.NewReaper(q, 0).Reap(ctx); err != nil || reaped.Expired != 2 {
		t.Fatalf("Reap = %+v, %v; want both jobs expired", reaped, err)
	}
}

// A runner's error can be a megabyte (a command line repeated in it): the stored error is
// bounded, and the event (which NATS must accept, or every later event waits) stays small,
// cut with a marker.
func TestHugeRunnerErrorIsBoundedInTheJobAndItsEvent(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	r := openReplica(t, db.URL, jobqueue.Options{})
	q, ctx := r.q, ctxT(t)
	register(t, q, "r1", false)
	id := runningJob(t, q, "r1")
	huge := strings.Repeat("x", 1<<20)
	if err := q.Fail(ctx, id, "r1", &spb.Status{Code: int32(codes.Internal), Message: huge}); err != nil {
		t.Fatalf("Fail with a 1 MB message: %v", err)
	}
	stored := getJob(t, q, id).GetError().GetMessage()
	if len(stored) > input.MaxText || !strings.Contains(stored, "truncated") {
		t.Fatalf("stored error is %d bytes, want at most %d with a truncation marker", len(stored), input.MaxText)
	}
	evs := jobEvents(t, r.pool, id)
	last := evs[len(evs)-1]
	if size := proto.Size(last); size > 16<<10 || !strings.Contains(last.GetErrorMessage(), "truncated") {
		t.Fatalf("JobStateChanged is %d bytes (message %d), want it small and marked truncated", size, len(last.GetErrorMessage()))
	}
}
