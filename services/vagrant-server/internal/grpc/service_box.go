package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// UpsertBox creates or updates a box (matched by resource_id, else name+version+provider).
func (s *Server) UpsertBox(ctx context.Context, req *vagrant.UpsertBoxRequest) (*vagrant.UpsertBoxResponse, error) {
	b, err := s.registry.UpsertBox(ctx, req.GetBox())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "upsert box", "box", input.Quote(req.GetBox().GetName()))
	}
	return &vagrant.UpsertBoxResponse{Box: b}, nil
}

// DeleteBox deletes a box; deleting a missing one succeeds (upstream).
func (s *Server) DeleteBox(ctx context.Context, req *vagrant.DeleteBoxRequest) (*emptypb.Empty, error) {
	if err := s.registry.DeleteBox(ctx, req.GetBox()); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "delete box", "box_id", input.Quote(req.GetBox().GetResourceId()))
	}
	return &emptypb.Empty{}, nil
}

// GetBox returns a box by resource_id.
func (s *Server) GetBox(ctx context.Context, req *vagrant.GetBoxRequest) (*vagrant.GetBoxResponse, error) {
	b, err := s.registry.GetBox(ctx, req.GetBox())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get box", "box_id", input.Quote(req.GetBox().GetResourceId()))
	}
	return &vagrant.GetBoxResponse{Box: b}, nil
}

// ListBoxes lists references to every box.
func (s *Server) ListBoxes(ctx context.Context, _ *emptypb.Empty) (*vagrant.ListBoxesResponse, error) {
	refs, err := s.registry.ListBoxes(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "list boxes")
	}
	return &vagrant.ListBoxesResponse{Boxes: refs}, nil
}

// FindBox returns the highest version of a box satisfying the version constraint, or an
// empty response (box unset) when none does, as upstream.
func (s *Server) FindBox(ctx context.Context, req *vagrant.FindBoxRequest) (*vagrant.FindBoxResponse, error) {
	b, err := s.registry.FindBox(ctx, req.GetBox())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "find box", "box", input.Quote(req.GetBox().GetName()))
	}
	return &vagrant.FindBoxResponse{Box: b}, nil
}
