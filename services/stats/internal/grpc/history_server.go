package grpc

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// History is what the history API reads: the usage history's recorder.
type History interface {
	Between(ctx context.Context, from, to time.Time) ([]cluster.Sample, error)
	Retention() time.Duration
}

// The bounds of GetCapacityHistory's max_points.
const (
	DefaultMaxPoints = 500
	MaxMaxPoints     = 5000
)

// HistoryServer implements plinth.stats.v1.HistoryService over the usage history and the
// activity (schema stats): Plinth's own API beside Koor's, read-only.
type HistoryServer struct {
	statsv1.UnimplementedHistoryServiceServer
	history  History
	activity ActivityLog
	log      *slog.Logger
	now      func() time.Time
}

// NewHistoryServer returns the service over h and a.
func NewHistoryServer(h History, a ActivityLog, log *slog.Logger) *HistoryServer {
	return &HistoryServer{history: h, activity: a, log: log, now: time.Now}
}

// GetCapacityHistory answers the capacity over the window ending now, thinned to at most
// max_points.
func (s *HistoryServer) GetCapacityHistory(ctx context.Context, req *statsv1.GetCapacityHistoryRequest) (*statsv1.GetCapacityHistoryResponse, error) {
	retention := s.history.Retention()
	window := retention
	if w := req.GetWindow(); w != nil {
		if err := w.CheckValid(); err != nil {
			return nil, input.Invalid("window", "%v", err)
		}
		switch d := w.AsDuration(); {
		case d < 0:
			return nil, input.Invalid("window", "%s is negative", d)
		case d > retention:
			return nil, input.Invalid("window", "%s is longer than the history's retention (%s)", d, retention)
		case d > 0:
			window = d
		}
	}
	maxPoints := int(req.GetMaxPoints())
	switch {
	case maxPoints == 0:
		maxPoints = DefaultMaxPoints
	case maxPoints < 2 || maxPoints > MaxMaxPoints:
		return nil, input.Invalid("max_points", "%d is out of range (2 to %d, or 0 for %d)", maxPoints, MaxMaxPoints, DefaultMaxPoints)
	}
	end := s.now()
	start := end.Add(-window)
	samples, err := s.history.Between(ctx, start, end)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "window", window)
	}
	thinned := cluster.Thin(samples, maxPoints)
	points := make([]*statsv1.CapacityPoint, len(thinned))
	for i, x := range thinned {
		points[i] = &statsv1.CapacityPoint{Time: timestamppb.New(x.At), TotalBytes: x.Total, UsedBytes: x.Used, AvailableBytes: max(x.Available, 0)}
	}
	return &statsv1.GetCapacityHistoryResponse{Points: points, StartTime: timestamppb.New(start), EndTime: timestamppb.New(end),
		Retention: durationpb.New(retention), Samples: int32(min(len(samples), 1<<31-1))}, nil
}
