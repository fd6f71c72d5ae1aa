package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open returns a store on a fresh schema, and a function that reopens it on a new pool (a
// restart of the service).
func open(t *testing.T) (*store.Store, func() *store.Store) {
	t.Helper()
	db := testenv.DB(t)
	connect := func() *store.Store {
		pool, err := pg.Open(ctxT(t), db.URL, store.Schema, store.Migrations, events.Migrations())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return store.New(pool)
	}
	return connect(), connect
}

// inTx runs fn in a transaction of the store's pool.
func inTx(t *testing.T, s *store.Store, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := pg.InTx(ctxT(t), store.PoolOf(s), fn); err != nil {
		t.Fatal(err)
	}
}

// The inventory and history behaviours every store shares are in conformance_test.go; these
// are the Postgres store's own.

func TestUsageHistoryBetweenAndAvailable(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := ctxT(t)
	var samples []cluster.Sample
	for i := range 6 {
		samples = append(samples, cluster.Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: cluster.HealthOK,
			Used: int64(i), Total: 10, Available: 8 - int64(i)})
	}
	if err := s.AddSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	// A row from before the available column existed reads as total − used.
	if _, err := store.PoolOf(s).Exec(ctx, `INSERT INTO usage_samples (at, health, checks, used_bytes, total_bytes, osds_up, osds_in, nodes_ready, nodes_total)
		VALUES ($1, 'HEALTH_OK', 0, 3, 10, 0, 0, 0, 0)`, t0.Add(150*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := s.SamplesBetween(ctx, t0.Add(2*time.Minute), t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Used != 2 || got[0].Available != 6 || got[1].Available != 7 || got[3].Used != 4 || !got[3].At.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("2m to 4m: %+v; want 2m, the old row at 2m30s (available 7), 3m, 4m", got)
	}
}
