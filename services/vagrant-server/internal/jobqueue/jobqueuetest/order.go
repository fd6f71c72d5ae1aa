package jobqueuetest

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

func orderBehaviours() []behaviour {
	return []behaviour{
		{Name: "order/jobs go out oldest first, across a restart", Run: func(st *QueueTest) {
			register(st, "r1")
			ids := []string{queue(st, anyRunner(), 0), queue(st, anyRunner(), 0), queue(st, anyRunner(), 0)}
			st.Restart()
			for i, want := range ids {
				if got := assign(st, "r1"); got.GetId() != want {
					st.T.Fatalf("assignment %d: job %s, want %s (queued %d)", i+1, got.GetId(), want, i+1)
				}
			}
			nothingFor(st, "r1", 300*time.Millisecond)
			listed := testenv.Must(st.Store.List(st.Ctx, jobqueue.Filter{States: []vagrant.Job_State{vagrant.Job_WAITING}}))(st.T)
			if len(listed) != 3 || listed[0].GetId() != ids[0] || listed[2].GetId() != ids[2] {
				st.T.Fatalf("waiting jobs listed: %v, want %v in queue order", listed, ids)
			}
			newest := testenv.Must(st.Store.List(st.Ctx, jobqueue.Filter{Limit: 1, NewestFirst: true}))(st.T)
			if len(newest) != 1 || newest[0].GetId() != ids[2] {
				st.T.Fatalf("newest job: %v, want %s", newest, ids[2])
			}
		}},
		{Name: "order/a job for one runner waits for it, and others pass it by", Run: func(st *QueueTest) {
			register(st, "r1")
			mine := queue(st, runnerID("r2"), 0)
			anyone := queue(st, anyRunner(), 0)
			if got := assign(st, "r1"); got.GetId() != anyone {
				st.T.Fatalf("r1 got %s, want %s (the older job is r2's)", got.GetId(), anyone)
			}
			nothingFor(st, "r1", 300*time.Millisecond)
			st.Restart()
			register(st, "r2")
			got := assign(st, "r2")
			if got.GetId() != mine || got.GetAssignedRunner().GetId() != "r2" {
				st.T.Fatalf("r2 got %v, want its job %s", got, mine)
			}
			state(st, mine, vagrant.Job_WAITING)
		}},
		{Name: "expiry/an expired job is never handed out, and acknowledging one ends it", Run: func(st *QueueTest) {
			register(st, "r1")
			expired := queue(st, runnerID("r2"), 200*time.Millisecond) // nobody takes it in time
			held := queue(st, anyRunner(), 300*time.Millisecond)
			if got := assign(st, "r1"); got.GetId() != held || got.GetExpireTime() == nil {
				st.T.Fatalf("r1 got %v, want %s with its expiry", got, held)
			}
			time.Sleep(500 * time.Millisecond)
			st.Restart()
			register(st, "r2")
			nothingFor(st, "r2", 300*time.Millisecond)
			fresh := queue(st, runnerID("r2"), time.Hour)
			if got := assign(st, "r2"); got.GetId() != fresh {
				st.T.Fatalf("r2 got %s, want the unexpired %s (not %s)", got.GetId(), fresh, expired)
			}
			_, err := st.Store.Ack(st.Ctx, held, "r1")
			is(st.T, "Ack after the expiry", err, jobqueue.ErrWrongState)
			if j := state(st, held, vagrant.Job_ERROR); j.GetError().GetCode() != int32(codes.DeadlineExceeded) {
				st.T.Fatalf("job acknowledged after its expiry ended with %v, want DEADLINE_EXCEEDED", j.GetError())
			}
		}},
		{Name: "order/old finished jobs are pruned, unfinished never", Run: func(st *QueueTest) {
			register(st, "r1")
			var done []string
			for range 3 {
				id := queue(st, anyRunner(), 0)
				assign(st, "r1")
				testenv.Must(st.Store.Ack(st.Ctx, id, "r1"))(st.T)
				testenv.OK(st.T, st.Store.Complete(st.Ctx, id, "r1", nil))
				done = append(done, id)
			}
			waiting := queue(st, runnerID("nobody"), 0)
			st.Restart()
			if n := testenv.Must(st.Store.PruneOldJobs(st.Ctx, 1))(st.T); n != 2 {
				st.T.Fatalf("pruned %d jobs, want the 2 older finished ones", n)
			}
			for _, id := range done[:2] {
				_, err := st.Store.Get(st.Ctx, id)
				is(st.T, "pruned job", err, jobqueue.ErrJobNotFound)
			}
			state(st, done[2], vagrant.Job_SUCCESS)
			state(st, waiting, vagrant.Job_QUEUED)
		}},
	}
}
