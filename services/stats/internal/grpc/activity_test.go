package grpc

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// activityLog is an ActivityLog over a slice, newest first, with the store's cursor rule.
type activityLog []inventory.Activity

func (l activityLog) Activity(_ context.Context, after inventory.ActivityCursor, limit int) ([]inventory.Activity, error) {
	var out []inventory.Activity
	for _, a := range l {
		if after.ID == 0 || a.At.Before(after.At) || a.At.Equal(after.At) && a.ID < after.ID {
			out = append(out, a)
		}
	}
	return out[:min(limit, len(out))], nil
}

func TestListActivityPages(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var log activityLog
	for i := 5; i >= 1; i-- {
		log = append(log, inventory.Activity{ID: int64(i), At: t0.Add(time.Duration(i) * time.Second), Subject: "s", Summary: "x", ActorID: "u", ActorName: "ops"})
	}
	s := NewHistoryServer(nil, log, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	var ids []int64
	token := ""
	for pages := 0; ; pages++ {
		resp, err := s.ListActivity(ctx, &statsv1.ListActivityRequest{PageSize: 2, PageToken: token})
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, a := range resp.GetActivities() {
			ids = append(ids, a.GetId())
			if a.GetActorUsername() != "ops" || a.GetActorUserId() != "u" || !a.GetTime().AsTime().Equal(t0.Add(time.Duration(a.GetId())*time.Second)) {
				t.Fatalf("entry %v", a)
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(ids) != 5 || ids[0] != 5 || ids[4] != 1 {
		t.Fatalf("paged through %v, want 5..1", ids)
	}
	for _, bad := range []*statsv1.ListActivityRequest{{PageSize: -1}, {PageToken: "bm90IGEgY3Vyc29y"}, {PageToken: "!!"}} {
		_, err := s.ListActivity(ctx, bad)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v, want InvalidArgument", bad, err)
		}
	}
	if _, err := NewHistoryServer(nil, failingLog{}, slog.New(slog.DiscardHandler)).ListActivity(ctx, &statsv1.ListActivityRequest{}); status.Code(err) != codes.Internal {
		t.Errorf("a failing store: %v, want Internal", err)
	}
}

type failingLog struct{}

func (failingLog) Activity(context.Context, inventory.ActivityCursor, int) ([]inventory.Activity, error) {
	return nil, errors.New("connection refused to 10.0.0.5:5432")
}
