package clustertest

import (
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

func historyBehaviours() []behaviour {
	return []behaviour{
		{Name: "history/an empty history has no samples", Run: func(st *StoreTest) {
			got, err := st.Store.SamplesSince(st.Ctx, time.Time{})
			want(st, "since the beginning", got, err, "[]")
			got, err = st.Store.SamplesBetween(st.Ctx, t0, t0.Add(time.Hour))
			want(st, "between", got, err, "[]")
			if n, err := st.Store.PruneSamples(st.Ctx, t0, 10); err != nil || n != 0 {
				st.T.Fatalf("prune: %d %v", n, err)
			}
		}},
		{Name: "history/every field comes back and samples are read oldest first", Run: func(st *StoreTest) {
			s := cluster.Sample{At: t0, Health: cluster.HealthWarn, Checks: 2, Used: 7, Total: 1 << 40, Available: 1<<40 - 9,
				OSDsUp: 3, OSDsIn: 4, NodesReady: 5, NodesTotal: 6}
			add(st, append(minutes(2, 1), s))
			st.Restart()
			got, err := st.Store.SamplesSince(st.Ctx, time.Time{})
			want(st, "all", got, err, "[7 1 2]")
			if !got[0].At.Equal(s.At) || got[0].Health != s.Health || got[0].Checks != s.Checks || got[0].Total != s.Total ||
				got[0].Available != s.Available || got[0].OSDsUp != s.OSDsUp || got[0].OSDsIn != s.OSDsIn ||
				got[0].NodesReady != s.NodesReady || got[0].NodesTotal != s.NodesTotal {
				st.T.Fatalf("stored %+v, read %+v", s, got[0])
			}
		}},
		{Name: "history/samples of one time keep the order they were added in", Run: func(st *StoreTest) {
			a, b := minutes(1)[0], minutes(1)[0]
			a.Used, b.Used = 10, 20
			add(st, []cluster.Sample{a})
			add(st, []cluster.Sample{b})
			st.Restart()
			got, err := st.Store.SamplesSince(st.Ctx, time.Time{})
			want(st, "all", got, err, "[10 20]")
		}},
		{Name: "history/since starts with the newest sample before the window", Run: func(st *StoreTest) {
			add(st, minutes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
			st.Restart()
			got, err := st.Store.SamplesSince(st.Ctx, t0.Add(5*time.Minute+time.Second))
			want(st, "since 5m1s", got, err, "[5 6 7 8 9]")
			got, err = st.Store.SamplesSince(st.Ctx, t0.Add(5*time.Minute))
			want(st, "since 5m", got, err, "[4 5 6 7 8 9]")
			got, err = st.Store.SamplesSince(st.Ctx, t0.Add(time.Hour))
			want(st, "since after the last", got, err, "[9]")
			got, err = st.Store.SamplesSince(st.Ctx, t0.Add(-time.Hour))
			want(st, "since before the first", got, err, "[0 1 2 3 4 5 6 7 8 9]")
		}},
		{Name: "history/between includes both ends", Run: func(st *StoreTest) {
			add(st, minutes(0, 1, 2, 3, 4, 5))
			st.Restart()
			got, err := st.Store.SamplesBetween(st.Ctx, t0.Add(2*time.Minute), t0.Add(4*time.Minute))
			want(st, "2m to 4m", got, err, "[2 3 4]")
			got, err = st.Store.SamplesBetween(st.Ctx, t0.Add(90*time.Second), t0.Add(150*time.Second))
			want(st, "1m30s to 2m30s", got, err, "[2]")
			got, err = st.Store.SamplesBetween(st.Ctx, t0.Add(time.Hour), t0.Add(2*time.Hour))
			want(st, "after the last", got, err, "[]")
		}},
		{Name: "history/prune drops samples by age and beyond the cap", Run: func(st *StoreTest) {
			add(st, minutes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
			st.Restart()
			if n, err := st.Store.PruneSamples(st.Ctx, t0.Add(2*time.Minute), 5); err != nil || n != 5 {
				st.T.Fatalf("pruned %d %v; want 2 by age and 3 more by the cap", n, err)
			}
			st.Restart()
			got, err := st.Store.SamplesSince(st.Ctx, time.Time{})
			want(st, "after pruning", got, err, "[5 6 7 8 9]")
			if n, err := st.Store.PruneSamples(st.Ctx, t0, 100); err != nil || n != 0 {
				st.T.Fatalf("pruned again %d %v", n, err)
			}
			if n, err := st.Store.PruneSamples(st.Ctx, t0.Add(time.Hour), 100); err != nil || n != 5 {
				st.T.Fatalf("pruned everything older than an hour: %d %v", n, err)
			}
			got, err = st.Store.SamplesSince(st.Ctx, time.Time{})
			want(st, "after pruning all", got, err, "[]")
		}},
	}
}
