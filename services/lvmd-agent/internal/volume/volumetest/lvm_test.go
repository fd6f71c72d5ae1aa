package volumetest_test

import (
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume/volumetest"
)

func TestLVMConformance(t *testing.T) {
	volumetest.LVMConformance(t, func(t *testing.T, pvSize uint64, pvs int) (volume.LVM, string) {
		l := volumetest.NewLVM()
		l.AddVG("vg", pvSize, pvs)
		return l, "vg"
	})
}

func TestRecorderConformance(t *testing.T) {
	volumetest.RecorderConformance(t, func(t *testing.T) func(string) volume.Recorder {
		nodes := map[string]*volumetest.Record{}
		return func(node string) volume.Recorder {
			if nodes[node] == nil {
				nodes[node] = volumetest.NewRecord(node)
			}
			return nodes[node]
		}
	})
}

func TestThinConformance(t *testing.T) {
	volumetest.ThinConformance(t, func(t *testing.T, poolSize uint64) (volume.LVM, string, string) {
		l := volumetest.NewLVM()
		l.AddVG("vg", 1<<30, 1)
		if err := l.AddThinPool("vg", "pool", poolSize); err != nil {
			t.Fatal(err)
		}
		return l, "vg", "pool"
	})
}
