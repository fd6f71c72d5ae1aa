package joboutputtest

import (
	"time"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

// Scopes of the log behaviours: targets T1 and T2 of project P, and project Q, all of basis B.
var (
	t1 = joboutput.Scope{BasisID: "B", ProjectID: "P", TargetID: "T1"}
	t2 = joboutput.Scope{BasisID: "B", ProjectID: "P", TargetID: "T2"}
	q  = joboutput.Scope{BasisID: "B", ProjectID: "Q"}
)

func logBehaviours() []behaviour {
	return []behaviour{
		{Name: "logs/a scope's backlog holds its jobs' newest lines, a target's in its project and basis", Run: func(st *StoreTest) {
			a, b, c, none := st.Store.NewJob(st.T), st.Store.NewJob(st.T), st.Store.NewJob(st.T), st.Store.NewJob(st.T)
			n := jobs{a: "a", b: "b", c: "c", none: "none"}
			appendOK(st, a, t1, 0, lines(time.Time{}, "a1", "a2"))
			appendOK(st, b, t2, 0, lines(time.Time{}, "b1"))
			appendOK(st, c, q, 0, lines(time.Time{}, "c1"))
			appendOK(st, none, joboutput.Scope{}, 0, lines(time.Time{}, "in no log"))
			appendOK(st, a, t1, 2, lines(time.Time{}, "a3"))
			st.Restart()
			backlog := func(s joboutput.Scope, limit int) []string {
				st.T.Helper()
				es, _ := must2(st.Store.LogBacklog(st.Ctx, s, limit, joboutput.LineCount))(st.T)
				return n.texts(es)
			}
			want(st, "target T1", backlog(t1, -1), []string{"a#1 a1", "a#2 a2", "a#3 a3"})
			want(st, "project P", backlog(joboutput.Scope{ProjectID: "P"}, -1), []string{"a#1 a1", "a#2 a2", "b#1 b1", "a#3 a3"})
			want(st, "basis B", backlog(joboutput.Scope{BasisID: "B"}, -1), []string{"a#1 a1", "a#2 a2", "b#1 b1", "c#1 c1", "a#3 a3"})
			want(st, "basis B, newest 2 lines", backlog(joboutput.Scope{BasisID: "B"}, 2), []string{"c#1 c1", "a#3 a3"})
			if es, _ := must2(st.Store.LogBacklog(st.Ctx, q, -1, joboutput.LineCount))(st.T); len(es) != 1 || es[0].Runner != "r1" {
				st.T.Fatalf("project Q's log: %v, want c's line by runner r1", es)
			}
			if _, _, err := st.Store.LogBacklog(st.Ctx, joboutput.Scope{}, -1, joboutput.LineCount); err == nil {
				st.T.Fatal("a log of no scope: want an error")
			}
		}},
		{Name: "logs/a follower gets what comes after its cursor, once, page by page", Run: func(st *StoreTest) {
			a, b, c := st.Store.NewJob(st.T), st.Store.NewJob(st.T), st.Store.NewJob(st.T)
			n := jobs{a: "a", b: "b", c: "c"}
			appendOK(st, a, t1, 0, lines(time.Time{}, "old"))
			project := joboutput.Scope{ProjectID: "P"}
			_, cur := must2(st.Store.LogBacklog(st.Ctx, project, 10, joboutput.LineCount))(st.T)
			got, cur := must2(st.Store.LogSince(st.Ctx, project, cur, 10))(st.T)
			want(st, "nothing new", n.texts(got), nil)
			appendOK(st, a, t1, 1, lines(time.Time{}, "new 1", "new 2", "new 3"))
			appendOK(st, b, t2, 0, lines(time.Time{}, "b's"))
			appendOK(st, c, q, 0, lines(time.Time{}, "elsewhere"))
			st.Restart()
			page1, cur := must2(st.Store.LogSince(st.Ctx, project, cur, 2))(st.T)
			page2, cur := must2(st.Store.LogSince(st.Ctx, project, cur, 2))(st.T)
			want(st, "two pages", append(n.texts(page1), n.texts(page2)...), []string{"a#2 new 1", "a#3 new 2", "a#4 new 3", "b#1 b's"})
			again, _ := must2(st.Store.LogSince(st.Ctx, project, cur, 10))(st.T)
			want(st, "after the last page", n.texts(again), nil)
		}},
	}
}
