package jobqueue_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// TestRestartLosesNothingAndKeepsDeadlines stops the only server with jobs queued, waiting
// and running, and starts a new one whose own timeouts are long: the deadlines stored before
// the restart are the ones enforced.
func TestRestartLosesNothingAndKeepsDeadlines(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := ctxT(t)
	before := openReplica(t, db.URL, jobqueue.Options{AckTimeout: 700 * time.Millisecond, HeartbeatTimeout: 700 * time.Millisecond})
	register(t, before.q, "r1", false)
	register(t, before.q, "r2", false)
	waiting := mustQueue(t, before.q, noopJob(anyRunner()), 0)
	assignWithin(t, before.q, "r1", 5*time.Second)
	running := mustQueue(t, before.q, noopJob(anyRunner()), 0)
	assignWithin(t, before.q, "r2", 5*time.Second)
	if _, err := before.q.Ack(ctx, running, "r2"); err != nil {
		t.Fatal(err)
	}
	queued := mustQueue(t, before.q, noopJob(runnerID("r3")), 0)
	expiring := mustQueue(t, before.q, noopJob(runnerID("nobody")), 700*time.Millisecond)
	before.close()

	long := jobqueue.Options{AckTimeout: time.Hour, HeartbeatTimeout: time.Hour, PollInterval: time.Minute}
	after := openReplica(t, db.URL, long)
	for id, want := range map[string]vagrant.Job_State{waiting: vagrant.Job_WAITING, running: vagrant.Job_RUNNING,
		queued: vagrant.Job_QUEUED, expiring: vagrant.Job_QUEUED} {
		if got := getJob(t, after.q, id); got.GetState() != want || got.GetQueueTime() == nil {
			t.Fatalf("after restart job %s = %v, want %s", id, got, want)
		}
	}
	if j := getJob(t, after.q, running); j.GetAssignedRunner().GetId() != "r2" || j.GetAckTime() == nil {
		t.Fatalf("running job lost its assignment: %v", j)
	}

	runReaper(t, after.q, 50*time.Millisecond)
	waitState(t, after.q, waiting, vagrant.Job_QUEUED, 5*time.Second) // ack deadline from before
	if j := waitState(t, after.q, running, vagrant.Job_ERROR, 5*time.Second); j.GetError().GetCode() != int32(codes.Unavailable) {
		t.Fatalf("running job after its heartbeat deadline = %v", j)
	}
	if j := waitState(t, after.q, expiring, vagrant.Job_ERROR, 5*time.Second); j.GetError().GetCode() != int32(codes.DeadlineExceeded) {
		t.Fatalf("expiring job = %v", j)
	}

	// The surviving jobs still run, oldest first.
	register(t, after.q, "r3", false)
	for _, want := range []string{waiting, queued} {
		j := assignWithin(t, after.q, "r3", 5*time.Second)
		if j.GetId() != want {
			t.Fatalf("r3 got %s, want %s", j.GetId(), want)
		}
		if _, err := after.q.Ack(ctx, want, "r3"); err != nil {
			t.Fatal(err)
		}
		if err := after.q.Complete(ctx, want, "r3", nil); err != nil {
			t.Fatal(err)
		}
	}
	all, err := after.q.List(ctx, jobqueue.Filter{})
	if err != nil || len(all) != 4 {
		t.Fatalf("List = %d jobs, %v; want all 4", len(all), err)
	}
}
