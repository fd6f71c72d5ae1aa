package volume

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

func TestNames(t *testing.T) {
	for _, ok := range []string{"pvc-1", "3c3d6e31-2c1b-4f7e-9d2b-5c9b0f0f1a01", "a.b_c+d", strings.Repeat("a", 127)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "-a", "a/b", "a b", "é", "snapshot-x", "pvmove0", "x_rimage_0", "plinthsnap-7", strings.Repeat("a", 128), "a\x00"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) accepted it", bad)
		}
	}
	for _, ok := range []string{"a", "topolvm.io/owner=x", "k:v&w#1!"} {
		if err := ValidateTag(ok); err != nil {
			t.Errorf("ValidateTag(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a,b", strings.Repeat("t", 1025)} {
		if err := ValidateTag(bad); err == nil {
			t.Errorf("ValidateTag(%q) accepted it", bad)
		}
	}
}

func TestFreeSubtractsSpareAndRoundsToExtents(t *testing.T) {
	spare := uint64(1)
	dc := &deviceclass.DeviceClass{SpareGB: &spare}
	for _, tt := range []struct {
		free, want uint64
	}{{3 << 30, 2 << 30}, {1 << 30, 0}, {1<<30 - 1, 0}, {0, 0}} {
		if got := free(lvm.VGInfo{Free: tt.free}, dc); got != tt.want {
			t.Errorf("free(%d) = %d, want %d", tt.free, got, tt.want)
		}
	}
	if got := free(lvm.VGInfo{Free: 20 << 30}, &deviceclass.DeviceClass{}); got != 10<<30 {
		t.Errorf("default spare: %d", got)
	}
	const ext = 4 << 20
	for _, tt := range []struct{ size, want uint64 }{{1 << 30, 1 << 30}, {1, ext}, {ext + 1, 2 * ext}, {0, 0}} {
		if got := extentBytes(tt.size, ext); got != tt.want {
			t.Errorf("extentBytes(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
	two := uint(2)
	if got := extentBytes(1<<30+1, ext*stripes(&deviceclass.DeviceClass{Stripe: &two})); got != 1<<30+8<<20 {
		t.Errorf("striped rounding %d", got)
	}
}

func TestWatchersCoalesce(t *testing.T) {
	var w watchers
	ch, cancel := w.add()
	for range 5 {
		w.notify()
	}
	<-ch
	select {
	case <-ch:
		t.Fatal("five changes before a read must coalesce into one wake-up")
	default:
	}
	cancel()
	w.notify() // no panic, nothing sent to a removed watcher
}
