package grpc

import (
	"context"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// UpsertTarget creates or updates a target. The project comes from target.project (as
// upstream), or from the request's project when the target names none.
func (s *Server) UpsertTarget(ctx context.Context, req *vagrant.UpsertTargetRequest) (*vagrant.UpsertTargetResponse, error) {
	t, err := s.registry.UpsertTarget(ctx, req.GetProject(), req.GetTarget())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "upsert target", "target", input.Quote(req.GetTarget().GetName()))
	}
	return &vagrant.UpsertTargetResponse{Target: t}, nil
}

// DeleteTarget deletes a target (by resource_id, or by name in the target's or the request's
// project); deleting a missing one succeeds (upstream).
func (s *Server) DeleteTarget(ctx context.Context, req *vagrant.DeleteTargetRequest) (*emptypb.Empty, error) {
	ref := req.GetTarget()
	if ref != nil && ref.Project == nil && req.GetProject() != nil {
		ref = proto.Clone(ref).(*sdk.Ref_Target)
		ref.Project = req.GetProject()
	}
	if err := s.registry.DeleteTarget(ctx, ref); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "delete target", "target_id", input.Quote(req.GetTarget().GetResourceId()))
	}
	return &emptypb.Empty{}, nil
}

// GetTarget returns a target by resource_id.
func (s *Server) GetTarget(ctx context.Context, req *vagrant.GetTargetRequest) (*vagrant.GetTargetResponse, error) {
	t, err := s.registry.GetTarget(ctx, req.GetTarget())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get target", "target_id", input.Quote(req.GetTarget().GetResourceId()))
	}
	return &vagrant.GetTargetResponse{Target: t}, nil
}

// FindTarget returns the target matching resource_id, else project and name, else a uuid
// prefix.
func (s *Server) FindTarget(ctx context.Context, req *vagrant.FindTargetRequest) (*vagrant.FindTargetResponse, error) {
	t, err := s.registry.FindTarget(ctx, req.GetTarget())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "find target", "target", input.Quote(req.GetTarget().GetName()))
	}
	return &vagrant.FindTargetResponse{Target: t}, nil
}

// ListTargets lists references to every target.
func (s *Server) ListTargets(ctx context.Context, _ *emptypb.Empty) (*vagrant.ListTargetsResponse, error) {
	refs, err := s.registry.ListTargets(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "list targets")
	}
	return &vagrant.ListTargetsResponse{Targets: refs}, nil
}
