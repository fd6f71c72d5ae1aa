package jobqueuetest

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// WaitChange waits up to within for w to report a change for which ok is true, and returns it.
func WaitChange(t testing.TB, w *jobqueue.Watch, within time.Duration, ok func(jobqueue.Change) bool) jobqueue.Change {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case c := <-w.C():
			if ok(c) {
				return c
			}
		case <-deadline:
			t.Fatalf("no matching change within %s", within)
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
			WaitChange(st.T, w, 10*time.Second, func(c jobqueue.Change) bool { return c.State == vagrant.Job_RUNNING })
			testenv.OK(st.T, st.Store.Cancel(st.Ctx, id, false))
			c := WaitChange(st.T, w, 10*time.Second, func(c jobqueue.Change) bool { return c.CancelRequested })
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
