package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/identity/identitytest"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// TestIdentityStoreConformance runs identitytest against the Postgres store; reopening
// closes the old pool first, as a restarted auth would.
func TestIdentityStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (identity.Store, func()) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := service.OpenPostgres(ctx, url, store.Schema, store.Migrations)
		if err != nil {
			t.Fatal(err)
		}
		return store.New(pool), pool.Close
	})
	identitytest.Run(t, factory, reopen)
}
