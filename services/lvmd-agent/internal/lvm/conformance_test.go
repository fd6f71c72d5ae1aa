package lvm_test

import (
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume/volumetest"
)

// TestRunnerConformance runs the volume rules' LVM suite on real lvm, the one
// volumetest.LVM passes in memory, so the fake the rules are tested with cannot drift.
func TestRunnerConformance(t *testing.T) {
	lvmtest.Require(t)
	volumetest.LVMConformance(t, func(t *testing.T, pvSize uint64, pvs int) (volume.LVM, string) {
		vg := lvmtest.New(t, lvmtest.Options{Size: int64(pvSize), PVs: pvs})
		return vg.Runner, vg.Name
	})
}

// TestRunnerThinConformance runs the thin suite volumetest.LVM passes on real lvm2 and
// device-mapper (in a VM where this kernel has none).
func TestRunnerThinConformance(t *testing.T) {
	if lvmtest.OnDeviceMapper(t) {
		return
	}
	volumetest.ThinConformance(t, func(t *testing.T, poolSize uint64) (volume.LVM, string, string) {
		vg := lvmtest.New(t, lvmtest.Options{Size: 1 << 30})
		vg.ThinPool(t, "pool", poolSize)
		return vg.Runner, vg.Name, "pool"
	})
}
