package grpc

import (
	"context"
	"log/slog"

	k8sv1 "github.com/plinth-dev/plinth/libs/api/api/resources/k8s/v1"
	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// StatsV1Server implements api.services.stats.v1.StatsService, the wire of every released Koor
// UI (v0.1.0-alpha to v0.6.0), over the same collector as StatsServer: each RPC reads the same
// view and only the mapping differs (convert_v1.go). Errors map as the seed's do (toStatus).
type StatsV1Server struct {
	koorstats.UnimplementedStatsServiceServer
	cluster Cluster
	log     *slog.Logger
}

// NewStatsV1Server returns the service over c.
func NewStatsV1Server(c Cluster, log *slog.Logger) *StatsV1Server {
	return &StatsV1Server{cluster: c, log: log}
}

// GetClusterStats answers the summary GetClusterStats of stats.StatsService answers.
func (s *StatsV1Server) GetClusterStats(ctx context.Context, _ *koorstats.GetClusterStatsRequest) (*koorstats.GetClusterStatsResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &koorstats.GetClusterStatsResponse{Stats: clusterStatsV1(&v.Summary)}, nil
}

// GetClusterResources answers the Rook resources and Deployments; empty without Kubernetes.
func (s *StatsV1Server) GetClusterResources(ctx context.Context, _ *koorstats.GetClusterResourcesRequest) (*koorstats.GetClusterResourcesResponse, error) {
	resources, deployments, err := s.cluster.Resources()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &koorstats.GetClusterResourcesResponse{Resources: resourceInfosV1(resources), Deployments: resourceInfosV1(deployments)}, nil
}

// GetClusterNodes answers the storage nodes: Kubernetes', else the suite's inventory.
func (s *StatsV1Server) GetClusterNodes(ctx context.Context, _ *koorstats.GetClusterNodesRequest) (*koorstats.GetClusterNodesResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	nodes := make([]*k8sv1.NodeInfo, len(v.Nodes))
	for i, n := range v.Nodes {
		nodes[i] = nodeInfoV1(n)
	}
	return &koorstats.GetClusterNodesResponse{Nodes: nodes}, nil
}

// GetClusterRadar answers the five indicators, the same as the seed's.
func (s *StatsV1Server) GetClusterRadar(ctx context.Context, _ *koorstats.GetClusterRadarRequest) (*koorstats.GetClusterRadarResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &koorstats.GetClusterRadarResponse{Radar: radarV1(v.Radar)}, nil
}

// ListClusterRecommendations answers the reliability rules the cluster breaks (the radar's,
// cluster.Recommendations), judged on the live pools and daemons.
func (s *StatsV1Server) ListClusterRecommendations(ctx context.Context, _ *koorstats.ListClusterRecommendationsRequest) (*koorstats.ListClusterRecommendationsResponse, error) {
	v, err := s.cluster.View()
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &koorstats.ListClusterRecommendationsResponse{Recommendations: recommendationsV1(cluster.Recommendations(v.Redundancy))}, nil
}
