package joboutputtest

import (
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

func outputBehaviours() []behaviour {
	return []behaviour{
		{Name: "output/a job's events are read back in order, after a number, up to a limit", Run: func(st *StoreTest) {
			a, b := st.Store.NewJob(st.T), st.Store.NewJob(st.T)
			n := jobs{a: "a", b: "b"}
			stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			appendOK(st, a, joboutput.Scope{}, 0, lines(stamp, "one", "two"))
			appendOK(st, b, joboutput.Scope{}, 0, lines(time.Time{}, "other job"))
			appendOK(st, a, joboutput.Scope{}, 2, lines(time.Time{}, "three"))
			st.Restart()
			all := testenv.Must(st.Store.ReadOutput(st.Ctx, a, 0, 10))(st.T)
			want(st, "job a", n.texts(all), []string{"a#1 one", "a#2 two", "a#3 three"})
			if !all[0].Time.Equal(stamp) || all[2].Time.IsZero() {
				st.T.Fatalf("times %v and %v: want the runner's stamp, else when it was stored", all[0].Time, all[2].Time)
			}
			want(st, "job a after 1, 1 at most", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, a, 1, 1))(st.T)), []string{"a#2 two"})
			want(st, "job a after 3", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, a, 3, 10))(st.T)), nil)
			want(st, "job b", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, b, 0, 10))(st.T)), []string{"b#1 other job"})
			want(st, "a job without output", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, st.Store.NewJob(st.T), 0, 10))(st.T)), nil)
		}},
		{Name: "output/numbers are taken once: a batch reusing one stores nothing", Run: func(st *StoreTest) {
			a := st.Store.NewJob(st.T)
			n := jobs{a: "a"}
			appendOK(st, a, joboutput.Scope{}, 0, lines(time.Time{}, "one", "two"))
			st.Restart()
			if err := st.Store.AppendOutput(st.Ctx, a, "r2", joboutput.Scope{}, 1, lines(time.Time{}, "again", "new")); err == nil {
				st.T.Fatal("a second writer stored events under numbers already taken")
			}
			want(st, "after the refused batch", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, a, 0, 10))(st.T)), []string{"a#1 one", "a#2 two"})
			appendOK(st, a, joboutput.Scope{}, 2, lines(time.Time{}, "three"))
			want(st, "the writer goes on", n.texts(testenv.Must(st.Store.ReadOutput(st.Ctx, a, 2, 10))(st.T)), []string{"a#3 three"})
			testenv.OK(st.T, st.Store.AppendOutput(st.Ctx, a, "r1", joboutput.Scope{}, 3, nil)) // nothing to store
		}},
	}
}
