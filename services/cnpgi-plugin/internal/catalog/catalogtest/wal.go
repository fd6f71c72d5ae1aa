package catalogtest

import (
	"slices"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

func walBehaviours() []behaviour {
	const seg1, seg2, seg3 = "000000010000000000000001", "000000010000000000000002", "000000010000000000000003"
	return []behaviour{
		{Name: "wal/a record is read back whole and keeps the first version", Run: func(st *StoreTest) {
			f := file("pg", seg1, 1)
			record(st, f)
			st.Restart()
			other := file("pg", seg1, 2)
			other.SHA256[0] ^= 1
			stored, inserted, err := st.Store.Catalog.Record(st.Ctx, other)
			if err != nil || inserted || !same(stored, f) {
				st.T.Fatalf("a second record of %s: %+v inserted %v, %v; want the first returned", seg1, stored, inserted, err)
			}
			got, ok, err := st.Store.Catalog.File(st.Ctx, "main", "pg", seg1)
			if err != nil || !ok || !same(got, f) {
				st.T.Fatalf("file %+v %v %v\nwant %+v", got, ok, err, f)
			}
			if _, ok, err := st.Store.Catalog.File(st.Ctx, "other-store", "pg", seg1); err != nil || ok {
				st.T.Fatalf("records are per store: %v %v", ok, err)
			}
		}},
		{Name: "wal/status counts segments only, by name, with the first required WAL", Run: func(st *StoreTest) {
			empty := testenv.Must(st.Store.Catalog.Status(st.Ctx, "main", "pg"))(st.T)
			if empty != (wal.Status{}) {
				st.T.Fatalf("empty status %+v", empty)
			}
			record(st, file("pg", seg3, 1), file("pg", "000000010000000100000000", 2), file("pg", seg2, 3),
				file("pg", "00000002.history", 4), file("pg", seg2+".00000028.backup", 5), file("other", seg1, 6))
			testenv.OK(st.T, st.Store.Catalog.SetFirstRequired(st.Ctx, "main", "pg", seg2))
			testenv.OK(st.T, st.Store.Catalog.SetFirstRequired(st.Ctx, "main", "pg", seg3))
			st.Restart()
			s := testenv.Must(st.Store.Catalog.Status(st.Ctx, "main", "pg"))(st.T)
			if s.FirstWAL != seg2 || s.LastWAL != "000000010000000100000000" || s.Segments != 3 || s.Bytes != 11+12+13+14+15 ||
				!s.LastArchivedAt.Equal(t0.Add(5e9)) || s.FirstRequired != seg3 {
				st.T.Fatalf("status %+v", s)
			}
			if got := testenv.Must(st.Store.Catalog.FirstRequiredWAL(st.Ctx, "main", "pg"))(st.T); got != seg3 {
				st.T.Fatalf("first required %q, want the last set", got)
			}
			if got := testenv.Must(st.Store.Catalog.FirstRequiredWAL(st.Ctx, "main", "other"))(st.T); got != "" {
				st.T.Fatalf("first required of a server without one: %q", got)
			}
		}},
		{Name: "wal/files found by a rebuild are added once, never announced, and deleted by name", Run: func(st *StoreTest) {
			record(st, file("pg", seg1, 1))
			found := []wal.ArchivedFile{file("pg", seg1, 1), file("pg", seg2, 2), file("pg", seg3, 3)}
			if n := testenv.Must(st.Store.Catalog.RecordFound(st.Ctx, found))(st.T); n != 2 {
				st.T.Fatalf("added %d, want the two missing", n)
			}
			st.Restart()
			if n := testenv.Must(st.Store.Catalog.RecordFound(st.Ctx, found))(st.T); n != 0 {
				st.T.Fatalf("a second rebuild added %d", n)
			}
			if names := testenv.Must(st.Store.Catalog.WALNames(st.Ctx, "main", "pg"))(st.T); !slices.Equal(names, []string{seg1, seg2, seg3}) {
				st.T.Fatalf("names %v", names)
			}
			pending := testenv.Must(st.Store.Catalog.PendingWAL(st.Ctx))(st.T)
			if len(pending) != 1 || pending[0].Files != 1 {
				st.T.Fatalf("pending %+v; want only the archived file, not the found ones", pending)
			}
			testenv.OK(st.T, st.Store.Catalog.DeleteWAL(st.Ctx, "main", "pg", []string{seg1, seg3}))
			testenv.OK(st.T, st.Store.Catalog.DeleteWAL(st.Ctx, "main", "pg", nil))
			st.Restart()
			if names := testenv.Must(st.Store.Catalog.WALNames(st.Ctx, "main", "pg"))(st.T); !slices.Equal(names, []string{seg2}) {
				st.T.Fatalf("names after deleting two: %v", names)
			}
		}},
	}
}
