package catalogtest

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// backupRecord is base backup id of server pg in store main, begun n hours after t0.
func backupRecord(id string, n int, status backup.Status) backup.Record {
	begin := t0.Add(time.Duration(n) * time.Hour)
	return backup.Record{Store: "main", Server: "pg", ID: id, Name: "b-" + id, Status: status, Timeline: 1,
		BeginWAL: "000000010000000000000002", EndWAL: "000000010000000000000003", BeginLSN: 0x2000028, EndLSN: 0x3000100,
		BeginTime: begin, EndTime: begin.Add(time.Minute), Size: 1000, StoredSize: 400, Compression: "gzip",
		SystemID: 7000000000000000001, PGVersion: 150004, Instance: "pg-1"}
}

// sameBackups compares records whatever zone their times are read in.
func sameBackups(got, want []backup.Record) bool {
	norm := func(rs []backup.Record) string {
		out := ""
		for _, r := range rs {
			r.BeginTime, r.EndTime = r.BeginTime.UTC(), r.EndTime.UTC()
			out += fmt.Sprintf("%+v\n", r)
		}
		return out
	}
	return norm(got) == norm(want)
}

func backupBehaviours() []behaviour {
	return []behaviour{
		{Name: "backup/records are saved, replaced, listed oldest first and deleted", Run: func(st *StoreTest) {
			late, early := backupRecord("20260801T120000", 2, backup.StatusStarted), backupRecord("20260801T100000", 0, backup.StatusDone)
			started := late
			started.EndTime, started.EndLSN, started.EndWAL = time.Time{}, 0, ""
			testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, started))
			testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, early))
			st.Restart()
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "main", "pg"))(st.T); !sameBackups(got, []backup.Record{early, started}) {
				st.T.Fatalf("backups %+v", got)
			}
			testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, late)) // the same id, now with its end
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "main", "pg"))(st.T); !sameBackups(got, []backup.Record{early, late}) {
				st.T.Fatalf("backups after replacing one %+v", got)
			}
			testenv.OK(st.T, st.Store.Catalog.DeleteBackup(st.Ctx, "main", "pg", early.ID))
			testenv.OK(st.T, st.Store.Catalog.DeleteBackup(st.Ctx, "main", "pg", "never-taken"))
			st.Restart()
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "main", "pg"))(st.T); !sameBackups(got, []backup.Record{late}) {
				st.T.Fatalf("backups after a delete %+v", got)
			}
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "other", "pg"))(st.T); len(got) != 0 {
				st.T.Fatalf("backups are per store: %+v", got)
			}
			if len(outbox(st)) != 0 {
				st.T.Fatal("saving a backup's record announced something")
			}
		}},
		{Name: "backup/finishing writes the record and exactly the event it is given", Run: func(st *StoreTest) {
			done, failed := backupRecord("20260801T100000", 0, backup.StatusDone), backupRecord("20260801T110000", 1, backup.StatusFailed)
			failed.Error = "failure: disk full"
			for _, r := range []backup.Record{done, failed} {
				started := r
				started.Status = backup.StatusStarted
				testenv.OK(st.T, st.Store.Catalog.SaveBackup(st.Ctx, started))
			}
			// The catalog writes what it is given, whatever payload that is.
			given := []proto.Message{&eventsv1.BackupCompleted{BackupId: done.ID, Instance: "given"}, &eventsv1.BackupFailed{BackupId: failed.ID, Error: "given"}}
			testenv.OK(st.T, st.Store.Catalog.FinishBackup(st.Ctx, backup.Finish{Record: done, Event: platformevents.Event{Payload: given[0]}}))
			st.Restart()
			testenv.OK(st.T, st.Store.Catalog.FinishBackup(st.Ctx, backup.Finish{Record: failed, Event: platformevents.Event{Payload: given[1]}}))
			st.Restart()
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "main", "pg"))(st.T); !sameBackups(got, []backup.Record{done, failed}) {
				st.T.Fatalf("backups %+v", got)
			}
			evs := outbox(st)
			if len(evs) != 2 || !proto.Equal(evs[0], given[0]) || !proto.Equal(evs[1], given[1]) {
				st.T.Fatalf("outbox %v; want exactly %v", evs, given)
			}
		}},
		{Name: "backup/a finish that cannot be written leaves neither record nor event", Run: func(st *StoreTest) {
			r := backupRecord("20260801T100000", 0, backup.StatusDone)
			// A payload the outbox cannot take: the transaction rolls back the record with it.
			err := st.Store.Catalog.FinishBackup(st.Ctx, backup.Finish{Record: r})
			if err == nil {
				st.T.Fatal("a finish without an event was written")
			}
			st.Restart()
			if got := testenv.Must(st.Store.Catalog.Backups(st.Ctx, "main", "pg"))(st.T); len(got) != 0 {
				st.T.Fatalf("the record was written without its event: %+v", got)
			}
			if evs := outbox(st); len(evs) != 0 {
				st.T.Fatalf("outbox %v", evs)
			}
		}},
	}
}
