package catalogtest

import (
	"errors"
	"slices"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// claim is an AnnounceWAL callback that keeps what it was given and announces it as one
// WALArchived naming the files in the order given.
func claim(got *[]wal.ArchivedFile) func([]wal.ArchivedFile) ([]platformevents.Event, error) {
	return func(files []wal.ArchivedFile) ([]platformevents.Event, error) {
		*got = append(*got, files...)
		ev := &eventsv1.WALArchived{ObjectStore: files[0].Store, ServerName: files[0].Server}
		for _, f := range files {
			ev.WalNames = append(ev.WalNames, f.Name)
		}
		return []platformevents.Event{{Payload: ev}}, nil
	}
}

func names(files []wal.ArchivedFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

func queueBehaviours() []behaviour {
	segs := []string{"000000010000000000000001", "000000010000000000000002", "000000010000000000000003"}
	return []behaviour{
		{Name: "queue/archived files wait per server, the longest waiting first", Run: func(st *StoreTest) {
			if p := testenv.Must(st.Store.Catalog.PendingWAL(st.Ctx))(st.T); len(p) != 0 {
				st.T.Fatalf("pending in an empty catalog: %+v", p)
			}
			record(st, file("b", segs[0], 1), file("a", segs[0], 2), file("b", segs[1], 3), file("b", "00000002.history", 4))
			st.Restart()
			p := testenv.Must(st.Store.Catalog.PendingWAL(st.Ctx))(st.T)
			if len(p) != 2 || p[0].Store != "main" || p[0].Server != "b" || p[0].Files != 3 || !p[0].Oldest.Equal(t0.Add(1e9)) ||
				p[1].Server != "a" || p[1].Files != 1 || !p[1].Oldest.Equal(t0.Add(2e9)) {
				st.T.Fatalf("pending %+v; want b (3 files since 1s) before a (1 since 2s)", p)
			}
		}},
		{Name: "queue/announcing claims up to the limit, oldest first, and writes exactly the events returned", Run: func(st *StoreTest) {
			record(st, file("pg", segs[0], 1), file("pg", segs[1], 2), file("pg", segs[2], 3), file("other", segs[0], 4))
			var got []wal.ArchivedFile
			if ok := testenv.Must(st.Store.Catalog.AnnounceWAL(st.Ctx, "main", "pg", 2, claim(&got)))(st.T); !ok {
				st.T.Fatal("nothing claimed")
			}
			want := []wal.ArchivedFile{file("pg", segs[0], 1), file("pg", segs[1], 2)}
			if len(got) != 2 || !slices.ContainsFunc(got, func(f wal.ArchivedFile) bool { return f.Name == segs[0] }) ||
				!slices.ContainsFunc(got, func(f wal.ArchivedFile) bool { return f.Name == segs[1] }) {
				st.T.Fatalf("claimed %v; want the two oldest", names(got))
			}
			for _, f := range got {
				i := slices.IndexFunc(want, func(w wal.ArchivedFile) bool { return w.Name == f.Name })
				w := want[i]
				if f.Store != w.Store || f.Server != w.Server || f.Kind != w.Kind || f.Size != w.Size || f.StoredSize != w.StoredSize || !f.ArchivedAt.Equal(w.ArchivedAt) {
					st.T.Fatalf("claimed %+v; want %+v's name, kind, sizes and time", f, w)
				}
			}
			st.Restart()
			p := testenv.Must(st.Store.Catalog.PendingWAL(st.Ctx))(st.T)
			if len(p) != 2 || p[0].Server != "pg" || p[0].Files != 1 || p[1].Server != "other" {
				st.T.Fatalf("pending after the claim %+v; want pg's third file and other's", p)
			}
			got = nil
			testenv.Must(st.Store.Catalog.AnnounceWAL(st.Ctx, "main", "pg", 2, claim(&got)))(st.T)
			if ok := testenv.Must(st.Store.Catalog.AnnounceWAL(st.Ctx, "main", "pg", 2, claim(&got)))(st.T); ok || len(got) != 1 || got[0].Name != segs[2] {
				st.T.Fatalf("second claim %v, then %v; want the third file, then nothing", names(got), ok)
			}
			evs := outbox(st)
			if len(evs) != 2 {
				st.T.Fatalf("outbox %v; want one event per claim", evs)
			}
			first, second := evs[0].(*eventsv1.WALArchived), evs[1].(*eventsv1.WALArchived)
			if slices.Sorted(slices.Values(first.GetWalNames()))[1] != segs[1] || !proto.Equal(second, &eventsv1.WALArchived{ObjectStore: "main", ServerName: "pg", WalNames: segs[2:]}) {
				st.T.Fatalf("outbox %v", evs)
			}
		}},
		{Name: "queue/an announcement that fails leaves its files waiting and writes nothing", Run: func(st *StoreTest) {
			record(st, file("pg", segs[0], 1))
			boom := errors.New("boom")
			_, err := st.Store.Catalog.AnnounceWAL(st.Ctx, "main", "pg", 10, func([]wal.ArchivedFile) ([]platformevents.Event, error) { return nil, boom })
			if !errors.Is(err, boom) {
				st.T.Fatalf("announce: %v, want the callback's error", err)
			}
			st.Restart()
			if p := testenv.Must(st.Store.Catalog.PendingWAL(st.Ctx))(st.T); len(p) != 1 || p[0].Files != 1 {
				st.T.Fatalf("pending %+v; want the file still waiting", p)
			}
			if evs := outbox(st); len(evs) != 0 {
				st.T.Fatalf("outbox %v", evs)
			}
		}},
	}
}
