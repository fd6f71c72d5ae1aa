package inventorytest

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

func activityBehaviours() []behaviour {
	keep := func(st *StoreTest, at int, summary string) {
		st.Record(func(s Store, tx pgx.Tx) error {
			return s.RecordActivity(st.Ctx, tx, inventory.Activity{At: sec(at), Subject: "plinth.kaas.cluster.status_changed",
				Summary: summary, ActorID: "u-" + summary, ActorName: "ops"}, inventory.MaxActivity)
		})
	}
	summaries := func(as []inventory.Activity) string {
		out := make([]string, len(as))
		for i, a := range as {
			out[i] = a.Summary
		}
		return fmt.Sprint(out)
	}
	return []behaviour{
		{Name: "activity/an empty log has no entries", Run: func(st *StoreTest) {
			if got := testenv.Must(st.Store().Activity(st.Ctx, inventory.ActivityCursor{}, 10))(st.T); len(got) != 0 {
				st.T.Fatalf("entries %+v", got)
			}
		}},
		{Name: "activity/newest first by time, then in the order recorded, paged by cursor", Run: func(st *StoreTest) {
			keep(st, 1, "b")
			keep(st, 2, "c")
			keep(st, 0, "a") // a late event: its time, not its arrival, places it
			keep(st, 2, "d")
			st.Restart()
			all := testenv.Must(st.Store().Activity(st.Ctx, inventory.ActivityCursor{}, 10))(st.T)
			if summaries(all) != "[d c b a]" {
				st.T.Fatalf("entries %s, want [d c b a]", summaries(all))
			}
			d := all[0]
			if d.ID == 0 || !d.At.Equal(sec(2)) || d.Subject != "plinth.kaas.cluster.status_changed" || d.ActorID != "u-d" || d.ActorName != "ops" {
				st.T.Fatalf("entry %+v", d)
			}
			page := testenv.Must(st.Store().Activity(st.Ctx, inventory.ActivityCursor{}, 2))(st.T)
			if summaries(page) != "[d c]" {
				st.T.Fatalf("first page %s", summaries(page))
			}
			last := page[len(page)-1]
			st.Restart()
			page = testenv.Must(st.Store().Activity(st.Ctx, inventory.ActivityCursor{At: last.At, ID: last.ID}, 2))(st.T)
			if summaries(page) != "[b a]" {
				st.T.Fatalf("second page %s, want [b a]", summaries(page))
			}
			last = page[len(page)-1]
			if rest := testenv.Must(st.Store().Activity(st.Ctx, inventory.ActivityCursor{At: last.At, ID: last.ID}, 2))(st.T); len(rest) != 0 {
				st.T.Fatalf("after the last: %s", summaries(rest))
			}
		}},
	}
}
