package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// UpsertProject creates a project in its basis (no resource_id) or updates one.
func (s *Server) UpsertProject(ctx context.Context, req *vagrant.UpsertProjectRequest) (*vagrant.UpsertProjectResponse, error) {
	p, err := s.registry.UpsertProject(ctx, req.GetProject())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "upsert project", "project", input.Quote(req.GetProject().GetName()))
	}
	return &vagrant.UpsertProjectResponse{Project: p}, nil
}

// GetProject returns a project by resource_id.
func (s *Server) GetProject(ctx context.Context, req *vagrant.GetProjectRequest) (*vagrant.GetProjectResponse, error) {
	p, err := s.registry.GetProject(ctx, req.GetProject())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get project", "project_id", input.Quote(req.GetProject().GetResourceId()))
	}
	return &vagrant.GetProjectResponse{Project: p}, nil
}

// FindProject returns the project matching resource_id, else name and/or path in its basis.
func (s *Server) FindProject(ctx context.Context, req *vagrant.FindProjectRequest) (*vagrant.FindProjectResponse, error) {
	p, err := s.registry.FindProject(ctx, req.GetProject())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "find project", "project", input.Quote(req.GetProject().GetName()))
	}
	return &vagrant.FindProjectResponse{Project: p}, nil
}

// ListProjects lists references to every project.
func (s *Server) ListProjects(ctx context.Context, _ *emptypb.Empty) (*vagrant.ListProjectsResponse, error) {
	refs, err := s.registry.ListProjects(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "list projects")
	}
	return &vagrant.ListProjectsResponse{Projects: refs}, nil
}
