package clustertest_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster/clustertest"
)

// TestMemoryConformance: the domain tests' fake passes the suite the Postgres store passes.
func TestMemoryConformance(t *testing.T) {
	clustertest.Run(t, func(t *testing.T) (cluster.Store, clustertest.Published) {
		m := clustertest.NewMemory()
		return m, func(t *testing.T) []proto.Message { return clustertest.Payloads(t, m.Events()) }
	}, func(_ *testing.T, s cluster.Store) cluster.Store { return s })
}
