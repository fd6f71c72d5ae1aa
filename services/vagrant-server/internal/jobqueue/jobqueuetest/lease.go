package jobqueuetest

import (
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

func leaseBehaviours() []behaviour {
	return []behaviour{
		{Name: "lease/only the assigned runner reports on its job, across a restart", Run: func(st *QueueTest) {
			register(st, "r1")
			register(st, "r2")
			id := queue(st, anyRunner(), 0)
			assign(st, "r1")
			if j := state(st, id, vagrant.Job_WAITING); j.GetAssignedRunner().GetId() != "r1" || j.GetAssignTime() == nil {
				st.T.Fatalf("assigned job: %v", j)
			}
			_, err := st.Store.Ack(st.Ctx, id, "r2")
			is(st.T, "another runner's Ack", err, jobqueue.ErrWrongState)
			is(st.T, "Heartbeat before the Ack", st.Store.Heartbeat(st.Ctx, id, "r1"), jobqueue.ErrWrongState)
			acked := testenv.Must(st.Store.Ack(st.Ctx, id, "r1"))(st.T)
			if acked.GetState() != vagrant.Job_RUNNING || acked.GetAckTime() == nil {
				st.T.Fatalf("acknowledged job: %v", acked)
			}
			st.Restart()
			is(st.T, "another runner's Heartbeat", st.Store.Heartbeat(st.Ctx, id, "r2"), jobqueue.ErrWrongState)
			testenv.OK(st.T, st.Store.Heartbeat(st.Ctx, id, "r1"))
			is(st.T, "another runner's Complete", st.Store.Complete(st.Ctx, id, "r2", nil), jobqueue.ErrWrongState)
			is(st.T, "Nack of a running job", st.Store.Nack(st.Ctx, id, "r1"), jobqueue.ErrWrongState)
			result := &vagrant.Job_Result{Init: &vagrant.Job_InitResult{}}
			testenv.OK(st.T, st.Store.Complete(st.Ctx, id, "r1", result))
			if j := state(st, id, vagrant.Job_SUCCESS); j.GetResult().GetInit() == nil || j.GetCompleteTime() == nil {
				st.T.Fatalf("completed job lost its result: %v", j)
			}
			is(st.T, "a second Complete", st.Store.Complete(st.Ctx, id, "r1", nil), jobqueue.ErrWrongState)
		}},
		{Name: "lease/a nacked job goes back to the queue for another runner", Run: func(st *QueueTest) {
			register(st, "r1")
			id := queue(st, anyRunner(), 0)
			assign(st, "r1")
			is(st.T, "another runner's Nack", st.Store.Nack(st.Ctx, id, "r2"), jobqueue.ErrWrongState)
			testenv.OK(st.T, st.Store.Nack(st.Ctx, id, "r1"))
			st.Restart()
			if j := state(st, id, vagrant.Job_QUEUED); j.GetAssignedRunner() != nil {
				st.T.Fatalf("a nacked job is still assigned: %v", j)
			}
			register(st, "r2")
			if got := assign(st, "r2"); got.GetId() != id {
				st.T.Fatalf("r2 got %s, want the nacked %s", got.GetId(), id)
			}
		}},
		{Name: "lease/a failed job keeps its runner's status", Run: func(st *QueueTest) {
			register(st, "r1")
			id := queue(st, anyRunner(), 0)
			assign(st, "r1")
			testenv.Must(st.Store.Ack(st.Ctx, id, "r1"))(st.T)
			testenv.OK(st.T, st.Store.Fail(st.Ctx, id, "r1", &spb.Status{Code: int32(codes.Aborted), Message: "vagrant up failed"}))
			st.Restart()
			if j := state(st, id, vagrant.Job_ERROR); j.GetError().GetCode() != int32(codes.Aborted) || j.GetError().GetMessage() != "vagrant up failed" {
				st.T.Fatalf("failed job's error: %v", j.GetError())
			}
			is(st.T, "Heartbeat of a failed job", st.Store.Heartbeat(st.Ctx, id, "r1"), jobqueue.ErrWrongState)
		}},
		{Name: "lease/unknown jobs are not found", Run: func(st *QueueTest) {
			const unknown = "01J0000000000000000000UNKN"
			_, err := st.Store.Get(st.Ctx, unknown)
			is(st.T, "Get", err, jobqueue.ErrJobNotFound)
			_, err = st.Store.Ack(st.Ctx, unknown, "r1")
			is(st.T, "Ack", err, jobqueue.ErrJobNotFound)
			is(st.T, "Nack", st.Store.Nack(st.Ctx, unknown, "r1"), jobqueue.ErrJobNotFound)
			is(st.T, "Heartbeat", st.Store.Heartbeat(st.Ctx, unknown, "r1"), jobqueue.ErrJobNotFound)
			is(st.T, "Complete", st.Store.Complete(st.Ctx, unknown, "r1", nil), jobqueue.ErrJobNotFound)
			is(st.T, "Cancel", st.Store.Cancel(st.Ctx, unknown, false), jobqueue.ErrJobNotFound)
			_, err = st.Store.Watch(st.Ctx, unknown)
			is(st.T, "Watch", err, jobqueue.ErrJobNotFound)
		}},
	}
}
