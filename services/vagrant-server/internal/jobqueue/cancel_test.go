package jobqueue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// TestCancelInEachState cancels through one replica while the runner's stream watches
// through another, as happens when CancelJob and RunnerJobStream land on different servers.
func TestCancelInEachState(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	api := openReplica(t, db.URL, fastOptions())    // serves CancelJob
	stream := openReplica(t, db.URL, fastOptions()) // holds the runner's stream
	ctx := ctxT(t)
	register(t, stream.q, "r1", false)
	// Start with a job to run by hand.
	start := func(ack bool) (string, *jobqueue.Watch) {
		t.Helper()
		id := mustQueue(t, api.q, noopJob(anyRunner()), 0)
		assignWithin(t, stream.q, "r1", 5*time.Second)
		if ack {
			if _, err := stream.q.Ack(ctx, id, "r1"); err != nil {
				t.Fatal(err)
			}
		}
		w, err := stream.q.Watch(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		return id, w
	}
	cancelRequested := func(c jobqueue.Change) bool { return c.CancelRequested }

	t.Run("queued ends at once", func(t *testing.T) {
		id := mustQueue(t, api.q, noopJob(runnerID("nobody")), 0) // never assigned
		if err := api.q.Cancel(ctx, id, false); err != nil {
			t.Fatal(err)
		}
		j := getJob(t, api.q, id)
		if j.GetState() != vagrant.Job_ERROR || j.GetError().GetCode() != int32(codes.Canceled) ||
			j.GetCancelTime() == nil || j.GetCompleteTime() == nil {
			t.Fatalf("canceled queued job = %v", j)
		}
	})

	t.Run("waiting: runner told, nack ends it", func(t *testing.T) {
		id, w := start(false)
		if err := api.q.Cancel(ctx, id, false); err != nil {
			t.Fatal(err)
		}
		c := waitChange(t, w, 5*time.Second, cancelRequested)
		if c.State != vagrant.Job_WAITING || c.CancelForced {
			t.Fatalf("change = %+v", c)
		}
		if err := stream.q.Nack(ctx, id, "r1"); err != nil {
			t.Fatal(err)
		}
		if j := getJob(t, api.q, id); j.GetState() != vagrant.Job_ERROR || j.GetError().GetCode() != int32(codes.Canceled) {
			t.Fatalf("job = %v; a canceled job must not go back to the queue", j)
		}
	})

	t.Run("running: runner told, job ends when it reports", func(t *testing.T) {
		id, w := start(true)
		if err := api.q.Cancel(ctx, id, false); err != nil {
			t.Fatal(err)
		}
		c := waitChange(t, w, 5*time.Second, cancelRequested)
		if c.State != vagrant.Job_RUNNING || c.CancelForced {
			t.Fatalf("change = %+v", c)
		}
		j := getJob(t, api.q, id)
		if j.GetState() != vagrant.Job_RUNNING || j.GetCancelTime() == nil {
			t.Fatalf("job being canceled = %v", j)
		}
		// Canceling again changes nothing (the first request time stays).
		if err := api.q.Cancel(ctx, id, false); err != nil {
			t.Fatal(err)
		}
		if again := getJob(t, api.q, id); !again.GetCancelTime().AsTime().Equal(j.GetCancelTime().AsTime()) {
			t.Fatal("second cancel moved cancel_time")
		}
		if err := stream.q.Fail(ctx, id, "r1", &spb.Status{Code: int32(codes.Canceled), Message: "interrupted"}); err != nil {
			t.Fatal(err)
		}
		got := eventStates(jobEvents(t, api.pool, id))
		want := []eventsv1.JobState{eventsv1.JobState_JOB_STATE_QUEUED, eventsv1.JobState_JOB_STATE_WAITING,
			eventsv1.JobState_JOB_STATE_RUNNING, eventsv1.JobState_JOB_STATE_RUNNING, eventsv1.JobState_JOB_STATE_ERROR}
		if !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v (the cancel request is an event too)", got, want)
		}
	})

	t.Run("running, forced: ends at once", func(t *testing.T) {
		id, w := start(true)
		if err := api.q.Cancel(ctx, id, true); err != nil {
			t.Fatal(err)
		}
		c := waitChange(t, w, 5*time.Second, cancelRequested)
		if c.State != vagrant.Job_ERROR || !c.CancelForced {
			t.Fatalf("change = %+v", c)
		}
		if err := stream.q.Complete(ctx, id, "r1", nil); !errors.Is(err, jobqueue.ErrWrongState) {
			t.Fatalf("Complete after forced cancel = %v", err)
		}
	})

	t.Run("completed: no-op", func(t *testing.T) {
		id, _ := start(true)
		if err := stream.q.Complete(ctx, id, "r1", nil); err != nil {
			t.Fatal(err)
		}
		before := len(jobEvents(t, api.pool, id))
		if err := api.q.Cancel(ctx, id, true); err != nil {
			t.Fatalf("Cancel of a finished job = %v; want nil", err)
		}
		j := getJob(t, api.q, id)
		if j.GetState() != vagrant.Job_SUCCESS || j.GetCancelTime() != nil || len(jobEvents(t, api.pool, id)) != before {
			t.Fatalf("finished job changed by Cancel: %v", j)
		}
	})

	t.Run("unknown job", func(t *testing.T) {
		if err := api.q.Cancel(ctx, "01NOSUCHJOB", false); !errors.Is(err, jobqueue.ErrJobNotFound) {
			t.Fatalf("Cancel = %v", err)
		}
		if _, err := api.q.Watch(ctx, "01NOSUCHJOB"); !errors.Is(err, jobqueue.ErrJobNotFound) {
			t.Fatalf("Watch = %v", err)
		}
	})
}
