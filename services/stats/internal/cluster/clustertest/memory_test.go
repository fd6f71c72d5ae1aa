package clustertest_test

import (
	"testing"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster/clustertest"
)

// TestMemoryHistoryConformance runs the suite against the Recorder tests' fake. The memory is
// the database here: a restarted stats would find it as it was, so reopening keeps it.
func TestMemoryHistoryConformance(t *testing.T) {
	clustertest.Run(t,
		func(*testing.T) cluster.HistoryStore { return &clustertest.MemoryHistory{} },
		func(_ *testing.T, s cluster.HistoryStore) cluster.HistoryStore { return s })
}
