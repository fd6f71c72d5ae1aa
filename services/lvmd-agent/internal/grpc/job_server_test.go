package grpc

import (
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

func TestJobPageKey(t *testing.T) {
	j := backup.Job{StartedAt: time.Date(2026, 11, 24, 6, 0, 0, 123456000, time.UTC), ID: 42}
	got, ok := parseJobKey(jobKey(j))
	if !ok || !got.StartedAt.Equal(j.StartedAt) || got.ID != 42 {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if got, ok := parseJobKey(""); got != nil || !ok {
		t.Fatalf("first page: %+v %v", got, ok)
	}
	for _, bad := range []string{"nope", "1.0", "1.-3", "x.1", "1"} {
		if _, ok := parseJobKey(bad); ok {
			t.Errorf("key %q parsed", bad)
		}
	}
}
