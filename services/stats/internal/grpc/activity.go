package grpc

import (
	"context"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// ActivityLog is what ListActivity reads: the activity stats recorded from the suite's events.
type ActivityLog interface {
	// Activity returns at most limit entries after cursor, newest first.
	Activity(ctx context.Context, after inventory.ActivityCursor, limit int) ([]inventory.Activity, error)
}

// activityPaging is ListActivity's page rule; a token is a page's last entry's cursor.
var activityPaging = input.Paging{Default: 100, Max: 500, MaxKey: 41, Call: "ListActivity"}

// cursorKey is a cursor as a page token's key: "<unix microseconds>.<id>".
func cursorKey(a inventory.Activity) string {
	return strconv.FormatInt(a.At.UnixMicro(), 10) + "." + strconv.FormatInt(a.ID, 10)
}

// parseCursor reads cursorKey's form; false for anything else.
func parseCursor(key string) (inventory.ActivityCursor, bool) {
	us, id, ok := strings.Cut(key, ".")
	if !ok {
		return inventory.ActivityCursor{}, false
	}
	t, err1 := strconv.ParseInt(us, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 {
		return inventory.ActivityCursor{}, false
	}
	return inventory.ActivityCursor{At: time.UnixMicro(t), ID: n}, true
}

// ListActivity answers a page of the activity, newest first.
func (s *HistoryServer) ListActivity(ctx context.Context, req *statsv1.ListActivityRequest) (*statsv1.ListActivityResponse, error) {
	size, err := activityPaging.Size(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	key, err := activityPaging.Key(req.GetPageToken(), func(k string) bool { _, ok := parseCursor(k); return ok })
	if err != nil {
		return nil, err
	}
	after, _ := parseCursor(key)
	rows, err := s.activity.Activity(ctx, after, size+1)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	page, next := input.Page(rows, size, cursorKey)
	out := &statsv1.ListActivityResponse{Activities: make([]*statsv1.Activity, len(page)), NextPageToken: next}
	for i, a := range page {
		out.Activities[i] = &statsv1.Activity{Id: a.ID, Time: timestamppb.New(a.At), Subject: a.Subject, Summary: a.Summary,
			ActorUserId: a.ActorID, ActorUsername: a.ActorName}
	}
	return out, nil
}
