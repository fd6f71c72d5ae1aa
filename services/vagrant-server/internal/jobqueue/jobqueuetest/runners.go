package jobqueuetest

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

func runnerBehaviours() []behaviour {
	return []behaviour{
		{Name: "runners/a runner id belongs to its first registrant", Run: func(st *QueueTest) {
			first := register(st, "r1")
			st.Restart()
			testenv.OK(st.T, st.Store.CheckRegistrant(st.Ctx, "r1", registrant))
			is(st.T, "another registrant's check", st.Store.CheckRegistrant(st.Ctx, "r1", "token:other"), jobqueue.ErrRunnerTaken)
			_, err := st.Store.RegisterRunner(st.Ctx, &vagrant.Runner{Id: "r1"}, "token:other")
			is(st.T, "another registrant's registration", err, jobqueue.ErrRunnerTaken)
			if again := register(st, "r1"); again == first {
				st.T.Fatalf("registering again kept session %d: a reconnect needs a new one", first)
			}
		}},
		{Name: "runners/unregistered runners are not found and take nothing", Run: func(st *QueueTest) {
			queue(st, anyRunner(), 0)
			_, err := st.Store.GetRunner(st.Ctx, "ghost")
			is(st.T, "GetRunner", err, jobqueue.ErrRunnerNotFound)
			is(st.T, "CheckRegistrant", st.Store.CheckRegistrant(st.Ctx, "ghost", registrant), jobqueue.ErrRunnerNotFound)
			_, err = st.Store.Assign(st.Ctx, "ghost")
			is(st.T, "Assign", err, jobqueue.ErrRunnerNotFound)
		}},
		{Name: "runners/a stream's end marks its session offline, not a newer one", Run: func(st *QueueTest) {
			old := register(st, "r1")
			register(st, "r2")
			current := register(st, "r1") // reconnected
			testenv.OK(st.T, st.Store.RunnerOffline(st.Ctx, "r1", old))
			if info := testenv.Must(st.Store.GetRunner(st.Ctx, "r1"))(st.T); !info.Online {
				st.T.Fatal("the end of an old session took the reconnected runner offline")
			}
			st.Restart()
			testenv.OK(st.T, st.Store.RunnerOffline(st.Ctx, "r1", current))
			if info := testenv.Must(st.Store.GetRunner(st.Ctx, "r1"))(st.T); info.Online || info.Runner.GetId() != "r1" {
				st.T.Fatalf("after its stream ended: %+v", info)
			}
			listed := testenv.Must(st.Store.ListRunners(st.Ctx, "", 10))(st.T)
			if len(listed) != 2 || listed[0].Runner.GetId() != "r1" || listed[1].Runner.GetId() != "r2" {
				st.T.Fatalf("listed runners: %v", listed)
			}
			if page := testenv.Must(st.Store.ListRunners(st.Ctx, "r1", 10))(st.T); len(page) != 1 || page[0].Runner.GetId() != "r2" {
				st.T.Fatalf("runners after r1: %v", page)
			}
		}},
	}
}
