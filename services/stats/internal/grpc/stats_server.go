package grpc

import (
	"context"
	"log/slog"

	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Cluster is what the API answers from: the collector.
type Cluster interface {
	View() (*cluster.View, error)
	Resources() (resources, deployments []cluster.Resource, err error)
	KoorCluster() (*cluster.KoorCluster, error)
}

// StatsServer implements stats.StatsService. Every request is empty (the token is checked
// before a handler runs), so there is no input to validate; every answer comes from the newest
// view and never waits for a source.
type StatsServer struct {
	statspb.UnimplementedStatsServiceServer
	cluster Cluster
	log     *slog.Logger
}

// NewStatsServer returns the service over c.
func NewStatsServer(c Cluster, log *slog.Logger) *StatsServer {
	return &StatsServer{cluster: c, log: log}
}

// GetClusterStats answers the cluster's summary: Ceph's health, daemons, data and I/O, with the
// inventory's LVM capacity and volumes added.
func (s *StatsServer) GetClusterStats(ctx context.Context, _ *statspb.GetClusterStatsRequest) (*statspb.GetClusterStatsResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &statspb.GetClusterStatsResponse{Stats: clusterStats(&v.Summary)}, nil
}

// GetClusterResources answers the Rook resources and Deployments of the storage cluster's
// namespace; empty without a Kubernetes source.
func (s *StatsServer) GetClusterResources(ctx context.Context, _ *statspb.GetClusterResourcesRequest) (*statspb.GetClusterResourcesResponse, error) {
	resources, deployments, err := s.cluster.Resources()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &statspb.GetClusterResourcesResponse{Resources: resourceInfos(resources), Deployments: resourceInfos(deployments)}, nil
}

// GetClusterNodes answers the storage nodes: those running Ceph pods (Kubernetes), else the
// suite's inventory.
func (s *StatsServer) GetClusterNodes(ctx context.Context, _ *statspb.GetClusterNodesRequest) (*statspb.GetClusterNodesResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	nodes := make([]*rstats.NodeInfo, len(v.Nodes))
	for i, n := range v.Nodes {
		nodes[i] = nodeInfo(n)
	}
	return &statspb.GetClusterNodesResponse{Nodes: nodes}, nil
}

// GetClusterRadar answers the five indicators (formulas in the README).
func (s *StatsServer) GetClusterRadar(ctx context.Context, _ *statspb.GetClusterRadarRequest) (*statspb.GetClusterRadarResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &statspb.GetClusterRadarResponse{Radar: radar(v.Radar)}, nil
}

// GetKoorCluster answers the namespace's KoorCluster; NotFound when there is none.
func (s *StatsServer) GetKoorCluster(ctx context.Context, _ *statspb.GetKoorClusterRequest) (*statspb.GetKoorClusterResponse, error) {
	k, err := s.cluster.KoorCluster()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &statspb.GetKoorClusterResponse{KoorCluster: koorCluster(k)}, nil
}
