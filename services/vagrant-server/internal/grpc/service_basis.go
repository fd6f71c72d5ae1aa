package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// UpsertBasis creates a basis (no resource_id) or updates one with the fields given.
func (s *Server) UpsertBasis(ctx context.Context, req *vagrant.UpsertBasisRequest) (*vagrant.UpsertBasisResponse, error) {
	b, err := s.registry.UpsertBasis(ctx, req.GetBasis())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "upsert basis", "basis", input.Quote(req.GetBasis().GetName()))
	}
	return &vagrant.UpsertBasisResponse{Basis: b}, nil
}

// GetBasis returns a basis by resource_id.
func (s *Server) GetBasis(ctx context.Context, req *vagrant.GetBasisRequest) (*vagrant.GetBasisResponse, error) {
	b, err := s.registry.GetBasis(ctx, req.GetBasis())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get basis", "basis_id", input.Quote(req.GetBasis().GetResourceId()))
	}
	return &vagrant.GetBasisResponse{Basis: b}, nil
}

// FindBasis returns the basis matching resource_id, else name and/or path.
func (s *Server) FindBasis(ctx context.Context, req *vagrant.FindBasisRequest) (*vagrant.FindBasisResponse, error) {
	b, err := s.registry.FindBasis(ctx, req.GetBasis())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "find basis", "basis", input.Quote(req.GetBasis().GetName()))
	}
	return &vagrant.FindBasisResponse{Basis: b}, nil
}

// ListBasis lists references to every basis.
func (s *Server) ListBasis(ctx context.Context, _ *emptypb.Empty) (*vagrant.ListBasisResponse, error) {
	refs, err := s.registry.ListBasis(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "list bases")
	}
	return &vagrant.ListBasisResponse{Basis: refs}, nil
}
