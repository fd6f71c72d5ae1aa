// Package jobqueuetest is the conformance suite every job queue (grpc.JobQueue, what the
// Vagrant API needs of it) must pass, after Waypoint's statetest: a table of behaviours —
// queue order, targeting, leases (assignment, ack, nack, heartbeat, completion), expiry,
// cancellation, runners and not-found errors — each run twice, once on one queue and once
// reopening it mid-test, so that nothing a behaviour relies on lives only in a process.
//
// The suite drives the queue only through the interface: deadlines enforced by a reaper
// (ack and heartbeat timeouts) are the implementation's own tests' to check.
package jobqueuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	vgrpc "github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
)

// Factory returns an empty queue for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) vgrpc.JobQueue

// Reopen returns a fresh queue on the same data as q, as a restarted (or another) replica
// would have, after stopping q.
type Reopen = func(t *testing.T, q vgrpc.JobQueue) vgrpc.JobQueue

// QueueTest is one behaviour's run against one queue: the test, its context, the queue
// under test, and Restart, which swaps the queue for one reopened on the same data.
type QueueTest = testenv.StoreRun[vgrpc.JobQueue]

// behaviour is one row of the conformance table.
type behaviour = testenv.Case[*QueueTest]

// Run runs every behaviour against queues from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	var all []behaviour
	for _, group := range [][]behaviour{orderBehaviours(), leaseBehaviours(), cancelBehaviours(), runnerBehaviours()} {
		all = append(all, group...)
	}
	testenv.RunStoreCases(t, all, factory, reopen)
}

// registrant is the credential the suite's runners register with.
const registrant = "token:suite"

// register registers runner id (taking any job) and returns its session.
func register(st *QueueTest, id string) int64 {
	st.T.Helper()
	return testenv.Must(st.Store.RegisterRunner(st.Ctx, &vagrant.Runner{Id: id}, registrant))(st.T)
}

func anyRunner() *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}
}

func runnerID(id string) *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: id}}}
}

// queue queues a noop job for target, expiring after expiresIn (0: never), and returns its id.
func queue(st *QueueTest, target *vagrant.Ref_Runner, expiresIn time.Duration) string {
	st.T.Helper()
	job := &vagrant.Job{TargetRunner: target, Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}
	return testenv.Must(st.Store.Queue(st.Ctx, job, expiresIn, registrant))(st.T)
}

// assign takes the next job for runner, failing the test when none comes within 10s.
func assign(st *QueueTest, runner string) *vagrant.Job {
	st.T.Helper()
	ctx, cancel := context.WithTimeout(st.Ctx, 10*time.Second)
	defer cancel()
	job, err := st.Store.Assign(ctx, runner)
	if err != nil || job == nil {
		st.T.Fatalf("Assign(%s) = %v, %v; want a job", runner, job, err)
	}
	return job
}

// nothingFor requires that runner is given no job within d.
func nothingFor(st *QueueTest, runner string, d time.Duration) {
	st.T.Helper()
	ctx, cancel := context.WithTimeout(st.Ctx, d)
	defer cancel()
	if job, err := st.Store.Assign(ctx, runner); job != nil || err == nil {
		st.T.Fatalf("Assign(%s) = %v, %v; want nothing to take", runner, job, err)
	}
}

// state requires job id to be in want and returns it.
func state(st *QueueTest, id string, want vagrant.Job_State) *vagrant.Job {
	st.T.Helper()
	j := testenv.Must(st.Store.Get(st.Ctx, id))(st.T)
	if j.GetState() != want {
		st.T.Fatalf("job %s is %s, want %s: %v", id, j.GetState(), want, j)
	}
	return j
}

// is requires errors.Is(err, target).
func is(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}
