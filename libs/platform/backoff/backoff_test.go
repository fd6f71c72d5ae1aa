package backoff

import (
	"context"
	"testing"
	"time"
)

func TestBackoffGrowsWithJitterWithinBounds(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	wantCeil := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, ceil := range wantCeil {
		ceil *= time.Millisecond
		d := b.Next()
		if d < ceil/2 || d > ceil {
			t.Fatalf("attempt %d: delay %s outside [%s, %s]", i, d, ceil/2, ceil)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after reset: %s", d)
	}
	for range 100 { // no overflow for long outages
		if d := b.Next(); d <= 0 || d > time.Second {
			t.Fatalf("delay %s out of bounds", d)
		}
	}
}

func TestSleepEndsEarlyOnWakeOrCancel(t *testing.T) {
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	if Sleep(context.Background(), time.Hour, wake) {
		t.Error("Sleep ignored the wake-up")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour, nil) {
		t.Error("Sleep ignored the cancellation")
	}
	if !Sleep(context.Background(), time.Millisecond, nil) {
		t.Error("a full Sleep reported false")
	}
}
