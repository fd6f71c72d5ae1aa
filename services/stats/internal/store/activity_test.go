package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

// TestActivityKeepsTheNewest: beyond inventory.MaxActivity entries the oldest are dropped.
func TestActivityKeepsTheNewest(t *testing.T) {
	t.Parallel()
	s, reopen := open(t)
	ctx := ctxT(t)
	inTx(t, s, func(tx pgx.Tx) error {
		return s.RecordActivity(ctx, tx, inventory.Activity{At: t0, Subject: "plinth.lvmd.volume.created", Summary: "first"}, inventory.MaxActivity)
	})
	// Jump the ids as if MaxActivity entries had been recorded since.
	if _, err := store.PoolOf(s).Exec(ctx, `SELECT setval('activity_id_seq', $1)`, inventory.MaxActivity); err != nil {
		t.Fatal(err)
	}
	inTx(t, s, func(tx pgx.Tx) error {
		return s.RecordActivity(ctx, tx, inventory.Activity{At: t0, Subject: "plinth.lvmd.volume.removed", Summary: "second", ActorID: "u", ActorName: "ops"}, inventory.MaxActivity)
	})
	got, err := reopen().Activity(ctx, inventory.ActivityCursor{}, 10)
	if err != nil || len(got) != 1 || got[0].Summary != "second" || got[0].ActorName != "ops" || !got[0].At.Equal(t0) {
		t.Fatalf("activity after %d more entries: %+v %v; want only the newest", inventory.MaxActivity, got, err)
	}
}
