package grpc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

type viewsFunc func() (*cluster.View, error)

func (f viewsFunc) View() (*cluster.View, error) { return f() }

func TestGetClusterDetailMapsTheSummary(t *testing.T) {
	at := time.Date(2026, 11, 24, 2, 17, 2, 0, time.UTC)
	v := &cluster.View{At: at, Summary: cluster.Ceph{Origin: cluster.OriginDashboard, FSID: "f", Health: "HEALTH_WARN",
		Checks: []cluster.Check{{Name: "RECENT_CRASH", Severity: "HEALTH_WARN", Message: "1 daemons have recently crashed",
			Details: []string{"osd.0 crashed on host h at 2026-11-24T02:17:02.000000Z"}, Count: 1, Muted: true}},
		Crashes: []cluster.Crash{{Daemon: "osd.0", Host: "h", Count: 1, Last: at}, {Daemon: "mgr.x", Count: 2}},
		Pools:   []cluster.Pool{{Name: "rbd", Size: 3, MinSize: 2, PGs: 32, ActiveClean: 31, StoredBytes: 1 << 20, Objects: 4}},
		OSDList: []cluster.OSD{{ID: 0, Up: true, In: true}, {ID: 1, In: true}}}}
	s := NewClusterServer(viewsFunc(func() (*cluster.View, error) { return v, nil }), slog.New(slog.DiscardHandler))
	got, err := s.GetClusterDetail(context.Background(), &statsv1.GetClusterDetailRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &statsv1.GetClusterDetailResponse{Source: statsv1.ClusterSource_CLUSTER_SOURCE_CEPH_DASHBOARD, Fsid: "f", Health: "HEALTH_WARN",
		Checks: []*statsv1.HealthCheck{{Code: "RECENT_CRASH", Severity: "HEALTH_WARN", Summary: "1 daemons have recently crashed",
			Details: []string{"osd.0 crashed on host h at 2026-11-24T02:17:02.000000Z"}, Count: 1, Muted: true}},
		Pools:    []*statsv1.Pool{{Name: "rbd", Size: 3, MinSize: 2, Pgs: 32, ActiveCleanPgs: 31, StoredBytes: 1 << 20, Objects: 4}},
		Osds:     []*statsv1.Osd{{Id: 0, Up: true, In: true}, {Id: 1, In: true}},
		Crashes:  []*statsv1.Crash{{Daemon: "osd.0", Host: "h", Count: 1, LastTime: ts(at)}, {Daemon: "mgr.x", Count: 2}},
		ReadTime: ts(at)}
	if !proto.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
	// Every origin has its wire value.
	for o, w := range map[cluster.Origin]statsv1.ClusterSource{cluster.OriginUnknown: statsv1.ClusterSource_CLUSTER_SOURCE_UNSPECIFIED,
		cluster.OriginPrometheus: statsv1.ClusterSource_CLUSTER_SOURCE_CEPH_PROMETHEUS, cluster.OriginRook: statsv1.ClusterSource_CLUSTER_SOURCE_ROOK,
		cluster.OriginInventory: statsv1.ClusterSource_CLUSTER_SOURCE_INVENTORY} {
		if g := clusterDetail(&cluster.Ceph{Origin: o}, at).GetSource(); g != w {
			t.Errorf("origin %d → %v, want %v", o, g, w)
		}
	}
}

func TestGetClusterDetailBeforeAnySourceAnswered(t *testing.T) {
	s := NewClusterServer(viewsFunc(func() (*cluster.View, error) {
		return nil, &cluster.NoDataError{Sources: []cluster.SourceState{{Name: "ceph"}}}
	}), slog.New(slog.DiscardHandler))
	if _, err := s.GetClusterDetail(context.Background(), &statsv1.GetClusterDetailRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("%v, want Unavailable", err)
	}
}
