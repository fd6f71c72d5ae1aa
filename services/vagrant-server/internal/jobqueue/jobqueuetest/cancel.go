package jobqueuetest

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// change waits up to 10s for w, the watch of job id, to report a change that satisfies ok.
func change(st *QueueTest, w *jobqueue.Watch, id, what string, ok func(jobqueue.Change) bool) jobqueue.Change {
	st.T.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-w.C():
			if ok(c) {
				return c
			}
		case <-timeout:
			st.T.Fatalf("watch of job %s: no change where %s", id, what)
		}
	}
}

func cancelBehaviours() []behaviour {
	return []behaviour{
		{Name: "cancel/a queued job ends at once and is never handed out", Run: func(st *QueueTest) {
			register(st, "r1")
			id := queue(st, runnerID("r1"), 0)
			testenv.OK(st.T, st.Store.Cancel(st.Ctx, id, false))
			st.Restart()
			if j := state(st, id, vagrant.Job_ERROR); j.GetError().GetCode() != int32(codes.Canceled) || j.GetCancelTime() == nil {
				st.T.Fatalf("canceled job: %v", j)
			}
			nothingFor(st, "r1", 300*time.Millisecond)
		}},
		{Name: "cancel/a held job is asked to stop; force ends it; a finished one stays", Run: func(st *QueueTest) {
			register(st, "r1")
			id := queue(st, anyRunner(), 0)
			assign(st, "r1")
			testenv.Must(st.Store.Ack(st.Ctx, id, "r1"))(st.T)
			w := testenv.Must(st.Store.Watch(st.Ctx, id))(st.T)
			defer w.Close()
			change(st, w, id, "the job runs", func(c jobqueue.Change) bool { return c.State == vagrant.Job_RUNNING })
			testenv.OK(st.T, st.Store.Cancel(st.Ctx, id, false))
			c := change(st, w, id, "the cancel is requested", func(c jobqueue.Change) bool { return c.CancelRequested })
			if c.CancelForced || !c.AssignedTo("r1") || c.AssignedTo("r2") {
				st.T.Fatalf("change after a cancel request: %+v", c)
			}
			if j := state(st, id, vagrant.Job_RUNNING); j.GetCancelTime() == nil {
				st.T.Fatalf("the cancel request is not recorded: %v", j)
			}
			testenv.OK(st.T, st.Store.Heartbeat(st.Ctx, id, "r1")) // still the runner's, until it reports
			st.Restart()
			testenv.OK(st.T, st.Store.Cancel(st.Ctx, id, true))
			if j := state(st, id, vagrant.Job_ERROR); j.GetError().GetCode() != int32(codes.Canceled) {
				st.T.Fatalf("force-canceled job: %v", j.GetError())
			}
			is(st.T, "Heartbeat of a force-canceled job", st.Store.Heartbeat(st.Ctx, id, "r1"), jobqueue.ErrWrongState)

			done := queue(st, anyRunner(), 0)
			assign(st, "r1")
			testenv.Must(st.Store.Ack(st.Ctx, done, "r1"))(st.T)
			testenv.OK(st.T, st.Store.Complete(st.Ctx, done, "r1", nil))
			testenv.OK(st.T, st.Store.Cancel(st.Ctx, done, true))
			if j := state(st, done, vagrant.Job_SUCCESS); j.GetCancelTime() != nil {
				st.T.Fatalf("canceling a finished job changed it: %v", j)
			}
		}},
	}
}
