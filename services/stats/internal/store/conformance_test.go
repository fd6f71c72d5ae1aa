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
	"github.com/plinth-dev/plinth/services/stats/internal/cluster/clustertest"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory/inventorytest"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

// postgresStores opens stores on a test's database; reopening closes the old pool first, as a
// restarted stats would.
func postgresStores() (func(*testing.T) *store.Store, func(*testing.T, *store.Store) *store.Store) {
	return testenv.Reopenable(func(t *testing.T, url string) (*store.Store, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := pg.Open(ctx, url, store.Schema, store.Migrations, events.Migrations())
		if err != nil {
			t.Fatal(err)
		}
		return store.New(pool), pool.Close
	})
}

var _ inventorytest.Store = (*store.Store)(nil)

// TestHistoryStoreConformance runs clustertest against the Postgres store.
func TestHistoryStoreConformance(t *testing.T) {
	open, reopen := postgresStores()
	clustertest.Run(t,
		func(t *testing.T) cluster.HistoryStore { return open(t) },
		func(t *testing.T, s cluster.HistoryStore) cluster.HistoryStore {
			return reopen(t, s.(*store.Store))
		})
}

// TestInventoryStoreConformance runs inventorytest against the Postgres store, its Record
// methods in transactions of its pool as the event consumer runs them.
func TestInventoryStoreConformance(t *testing.T) {
	open, reopen := postgresStores()
	opened := func(s *store.Store) inventorytest.Opened {
		return inventorytest.Opened{Store: s, InTx: func(ctx context.Context, fn func(pgx.Tx) error) error {
			return pg.InTx(ctx, store.PoolOf(s), fn)
		}}
	}
	inventorytest.Run(t,
		func(t *testing.T) inventorytest.Opened { return opened(open(t)) },
		func(t *testing.T, o inventorytest.Opened) inventorytest.Opened {
			return opened(reopen(t, o.Store.(*store.Store)))
		})
}
