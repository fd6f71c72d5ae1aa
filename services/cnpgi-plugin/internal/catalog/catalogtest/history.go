package catalogtest

import (
	"slices"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
)

func historyBehaviours() []behaviour {
	return []behaviour{
		{Name: "history/a server's archive summarised, alone and among all", Run: func(st *StoreTest) {
			if s := testenv.Must(st.Store.History.Summary(st.Ctx, "main", "pg"))(st.T); s != (history.Summary{}) {
				st.T.Fatalf("empty archive: %+v", s)
			}
			record(st, file("pg", "000000010000000000000002", 1), file("pg", "000000010000000000000001", 2),
				file("pg", "00000002.history", 3), file("pg", "000000020000000000000003", 4), file("other", "000000010000000000000009", 5))
			for i, status := range []backup.Status{backup.StatusDone, backup.StatusDone, backup.StatusFailed, backup.StatusStarted} {
				r := backupRecord("b"+string(rune('0'+i)), i, status)
				if status == backup.StatusStarted {
					r.EndTime = time.Time{}
				}
				testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, r))
			}
			failedOnly := backupRecord("x", 0, backup.StatusFailed)
			failedOnly.Store, failedOnly.Server = "cold", "only-backups"
			testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, failedOnly))
			st.Restart()
			s := testenv.Must(st.Store.History.Summary(st.Ctx, "main", "pg"))(st.T)
			end := func(n int) time.Time { return t0.Add(time.Duration(n)*time.Hour + time.Minute) }
			if s.Segments != 3 || s.StoredBytes != 11+12+13+14 || s.FirstWAL != "000000010000000000000001" || s.LastWAL != "000000020000000000000003" ||
				!s.LastArchivedAt.Equal(t0.Add(4e9)) || s.Backups != 2 || !s.FirstRecoverabilityPoint.Equal(end(0)) ||
				!s.LastSuccessfulBackup.Equal(end(1)) || !s.LastFailedBackup.Equal(end(2)) {
				st.T.Fatalf("summary %+v", s)
			}
			cold := testenv.Must(st.Store.History.Summary(st.Ctx, "cold", "only-backups"))(st.T)
			if cold.Segments != 0 || !cold.LastFailedBackup.Equal(end(0)) || cold.Backups != 0 {
				st.T.Fatalf("a server with only a failed backup: %+v", cold)
			}
			other := testenv.Must(st.Store.History.Summary(st.Ctx, "main", "other"))(st.T)
			want := []history.Server{{Store: "cold", Server: "only-backups", Summary: cold}, {Store: "main", Server: "other", Summary: other}, {Store: "main", Server: "pg", Summary: s}}
			if all := testenv.Must(st.Store.History.Servers(st.Ctx, ""))(st.T); !slices.Equal(all, want) {
				st.T.Fatalf("servers %+v\nwant %+v", all, want)
			}
			if main := testenv.Must(st.Store.History.Servers(st.Ctx, "main"))(st.T); !slices.Equal(main, want[1:]) {
				st.T.Fatalf("servers of main %+v", main)
			}
			for _, c := range []struct {
				store, server string
				known         bool
			}{{"main", "pg", true}, {"cold", "only-backups", true}, {"main", "nobody", false}, {"cold", "pg", false}} {
				if _, ok, err := st.Store.History.Find(st.Ctx, c.store, c.server); err != nil || ok != c.known {
					st.T.Errorf("Find(%s, %s) = %v, %v", c.store, c.server, ok, err)
				}
			}
		}},
	}
}
