package latency_test

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/latency"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0, time.Millisecond}, {0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := latency.Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(1..100 ms, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := latency.Percentile(nil, 0.99); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}
