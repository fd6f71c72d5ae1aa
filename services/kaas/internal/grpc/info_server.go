package grpc

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/types/known/timestamppb"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// Timeline reads a cluster's status changes, oldest first.
type Timeline interface {
	History(ctx context.Context, name string) ([]cluster.StatusEntry, error)
}

// Jobs names the job that last worked on a machine, from its provider's progress state.
type Jobs interface {
	JobOf(provider string, state []byte) string
}

// InfoServer implements plinth.kaas.v1.ClusterInfoService: reads only.
type InfoServer struct {
	kaasv1.UnimplementedClusterInfoServiceServer
	svc      *cluster.Service
	timeline Timeline
	jobs     Jobs
	provider string
	log      *slog.Logger
}

// NewInfoServer serves svc's clusters with their timelines and machines' jobs; provider is
// the one new clusters get.
func NewInfoServer(svc *cluster.Service, timeline Timeline, jobs Jobs, provider string, log *slog.Logger) *InfoServer {
	return &InfoServer{svc: svc, timeline: timeline, jobs: jobs, provider: provider, log: log}
}

// GetCatalog returns the choices kaas's rules accept.
func (s *InfoServer) GetCatalog(context.Context, *kaasv1.GetCatalogRequest) (*kaasv1.GetCatalogResponse, error) {
	r := s.svc.Rules()
	out := &kaasv1.GetCatalogResponse{DefaultVersion: r.Catalog.Default().String(), InstanceTypes: r.InstanceTypes,
		MaxPoolSize: int32(r.MaxPoolSize), Provider: s.provider}
	for _, v := range r.Catalog.Versions() {
		out.Versions = append(out.Versions, v.String())
	}
	for _, n := range cluster.ControlPlaneSizes {
		out.ControlPlaneSizes = append(out.ControlPlaneSizes, int32(n))
	}
	return out, nil
}

// GetClusterInfo returns one cluster as the console shows it.
func (s *InfoServer) GetClusterInfo(ctx context.Context, req *kaasv1.GetClusterInfoRequest) (*kaasv1.GetClusterInfoResponse, error) {
	v, cause, err := s.svc.Info(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "cluster", input.Quote(req.GetName()))
	}
	history, err := s.timeline.History(ctx, v.Name)
	if err != nil {
		return nil, toStatus(ctx, s.log, fmt.Errorf("read the timeline: %w", err), "cluster", input.Quote(v.Name))
	}
	info := &kaasv1.ClusterInfo{Name: v.Name, Status: kaaspb.ClusterStatus(v.Status), StatusMessage: v.StatusMessage,
		Version: v.Version, TargetVersion: v.TargetVersion, Provider: v.Provider, Deleting: v.Deleting,
		CreateTime: timestamppb.New(v.CreatedAt), UpdateTime: timestamppb.New(v.UpdatedAt)}
	if cause.Kind != "" {
		info.Cause = &kaasv1.Cause{Kind: cause.Kind, Summary: cause.Summary, NextStep: cause.NextStep, Machine: cause.Machine}
	}
	for _, p := range v.Pools {
		pool := &kaasv1.Pool{Name: p.Name, Role: p.Role.String(), InstanceType: p.InstanceType, Count: int32(p.Count), Deleting: p.Deleting}
		for _, l := range p.Labels {
			pool.Labels = append(pool.Labels, l.Name+"="+l.Value)
		}
		info.Pools = append(info.Pools, pool)
	}
	for _, m := range v.Machines {
		info.Machines = append(info.Machines, &kaasv1.Machine{Name: m.Name, Pool: m.Pool, Role: m.Role.String(), State: m.State.String(),
			Version: m.Version, ProviderId: m.ProviderID, ProviderStatus: m.ProviderStatus, Hostname: m.Hostname, Addresses: m.Addresses,
			Message: m.Message, Releasing: m.Release, VagrantJobId: s.jobs.JobOf(v.Provider, m.ProviderState), CreateTime: timestamppb.New(m.CreatedAt)})
	}
	for _, e := range history {
		info.Timeline = append(info.Timeline, &kaasv1.StatusChange{Time: timestamppb.New(e.Time), Status: kaaspb.ClusterStatus(e.Status),
			Message: e.Message, ActorUsername: e.Actor})
	}
	return &kaasv1.GetClusterInfoResponse{Cluster: info}, nil
}
