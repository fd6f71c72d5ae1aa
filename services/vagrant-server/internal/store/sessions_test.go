package store_test

import (
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions/sessionstest"
)

// TestSessionStoreConformance runs the session token store's suite on Postgres, plain and
// reopening the store (a new pool on the same database) mid-test.
func TestSessionStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (sessionstest.Store, func()) { return openOn(t, url) })
	sessionstest.Run(t, factory, reopen)
}
