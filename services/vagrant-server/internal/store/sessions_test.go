package store_test

import (
	"context"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions/sessionstest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/store"
)

// TestSessionStoreConformance runs the session token store's suite on Postgres, plain and
// reopening the store (a new pool on the same database) mid-test.
func TestSessionStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (sessionstest.Store, func()) {
		pool, err := service.OpenPostgres(context.Background(), url, store.Schema, store.Migrations, jobqueue.Migrations())
		if err != nil {
			t.Fatal(err)
		}
		return store.New(pool), pool.Close
	})
	sessionstest.Run(t, factory, reopen)
}
