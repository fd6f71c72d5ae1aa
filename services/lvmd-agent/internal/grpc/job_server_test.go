package grpc

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

func TestJobPageToken(t *testing.T) {
	c := backup.JobCursor{StartedAt: time.Date(2026, 11, 24, 6, 0, 0, 123456000, time.UTC), ID: 42}
	got, err := decodeJobToken(encodeJobToken(c))
	if err != nil || !got.StartedAt.Equal(c.StartedAt) || got.ID != 42 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if got, err := decodeJobToken(""); got != nil || err != nil {
		t.Fatalf("empty token: %+v %v", got, err)
	}
	for _, bad := range []string{"!!", "bm9wZQ", "MS4w", "MS4tMw", string(make([]byte, 100))} {
		_, err := decodeJobToken(bad)
		if s, _ := status.FromError(err); s.Code() != codes.InvalidArgument || s.Message() == "" {
			t.Errorf("token %q: %v", bad, err)
		}
	}
}
