package grpc

import (
	"context"
	"log/slog"
	"time"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Views is what the cluster API answers from: the collector's newest view.
type Views interface {
	View() (*cluster.View, error)
}

// ClusterServer implements plinth.stats.v1.ClusterService: the health checks, pools, OSDs and
// crashes behind Koor's one-line summary. Its request is empty (the token is checked before a
// handler runs), so there is no input to validate; it answers from the newest view and never
// waits for a source.
type ClusterServer struct {
	statsv1.UnimplementedClusterServiceServer
	views Views
	log   *slog.Logger
}

// NewClusterServer returns the service over v.
func NewClusterServer(v Views, log *slog.Logger) *ClusterServer {
	return &ClusterServer{views: v, log: log}
}

// GetClusterDetail answers the summary's health with its checks, pools, OSDs and crashes.
func (s *ClusterServer) GetClusterDetail(ctx context.Context, _ *statsv1.GetClusterDetailRequest) (*statsv1.GetClusterDetailResponse, error) {
	v, err := s.views.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return clusterDetail(&v.Summary, v.At), nil
}

// clusterDetail maps the summary; the inventory's LVM capacity is in ClusterStats, not here
// (its device classes are not Ceph pools).
func clusterDetail(c *cluster.Ceph, at time.Time) *statsv1.GetClusterDetailResponse {
	out := &statsv1.GetClusterDetailResponse{Source: statsv1.ClusterSource(c.Origin), Fsid: c.FSID, Health: c.Health, ReadTime: ts(at)}
	for _, k := range c.Checks {
		out.Checks = append(out.Checks, &statsv1.HealthCheck{Code: k.Name, Severity: k.Severity, Summary: k.Message,
			Details: k.Details, Muted: k.Muted, Count: k.Count})
	}
	for _, p := range c.Pools {
		out.Pools = append(out.Pools, &statsv1.Pool{Name: p.Name, Size: i32(p.Size), MinSize: i32(p.MinSize), Pgs: i32(p.PGs),
			ActiveCleanPgs: i32(p.ActiveClean), StoredBytes: p.StoredBytes, Objects: p.Objects})
	}
	for _, o := range c.OSDList {
		out.Osds = append(out.Osds, &statsv1.Osd{Id: i32(o.ID), Up: o.Up, In: o.In})
	}
	for _, cr := range c.Crashes {
		out.Crashes = append(out.Crashes, &statsv1.Crash{Daemon: cr.Daemon, Host: cr.Host, Count: i32(cr.Count), LastTime: ts(cr.Last)})
	}
	return out
}
