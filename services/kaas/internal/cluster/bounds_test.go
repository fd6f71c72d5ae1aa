package cluster

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// TestBoundsAgree: every Plinth server refuses requests over libs/platform/input/bounds
// before kaas sees them, so the table and kaas' own rules must name the same numbers.
func TestBoundsAgree(t *testing.T) {
	for field, want := range map[string]int{
		"cnct.kaas.api.CreateClusterMsg.worker_node_pools": MaxPools,
		"cnct.kaas.api.AddNodePoolMsg.worker_node_pools":   MaxPools,
		"cnct.kaas.api.ScaleNodePoolMsg.node_pools":        MaxPools,
		"cnct.kaas.api.DeleteNodePoolMsg.node_pool_names":  MaxPools,
		"cnct.kaas.api.MachineSpec.labels":                 MaxLabels,
		"cnct.kaas.api.ControlPlaneMachineSpec.labels":     MaxLabels,
	} {
		if got := bounds.Fields[protoreflect.FullName(field)].Max; got != want {
			t.Errorf("bounds.Fields[%s] is %d; kaas allows %d", field, got, want)
		}
	}
}
