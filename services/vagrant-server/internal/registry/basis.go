package registry

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// UpsertBasis creates b when it has no resource_id (a new ULID is assigned; name and path are
// required) and otherwise updates the stored basis with the fields b sets. An unknown
// resource_id is NotFound: ids are assigned by the server, never chosen by clients.
func (s *Service) UpsertBasis(ctx context.Context, b *vagrant.Basis) (*vagrant.Basis, error) {
	if b == nil {
		return nil, Invalid("basis", "required")
	}
	b = proto.Clone(b).(*vagrant.Basis)
	b.Projects = nil // derived from the projects' own basis
	if b.ResourceId != "" {
		return s.store.UpdateBasis(ctx, b.ResourceId, func(cur *vagrant.Basis) error {
			overlay(cur, b)
			return nil
		})
	}
	if b.Name == "" {
		return nil, Invalid("basis.name", "required to create a basis")
	}
	if b.Path == "" {
		return nil, Invalid("basis.path", "required to create a basis")
	}
	id, err := s.newID()
	if err != nil {
		return nil, err
	}
	b.ResourceId = id
	return s.store.CreateBasis(ctx, b)
}

// GetBasis returns the basis ref.resource_id names.
func (s *Service) GetBasis(ctx context.Context, ref *sdk.Ref_Basis) (*vagrant.Basis, error) {
	return byID(ctx, "basis.resource_id", ref.GetResourceId(), s.store.GetBasis)
}

// FindBasis returns the basis b describes: by resource_id, else by name and/or path (all
// given ones must match), as upstream's fuzzy lookup.
func (s *Service) FindBasis(ctx context.Context, b *vagrant.Basis) (*vagrant.Basis, error) {
	if b == nil {
		return nil, Invalid("basis", "required")
	}
	return s.resolveBasis(ctx, "basis", &sdk.Ref_Basis{ResourceId: b.ResourceId, Name: b.Name, Path: b.Path})
}

// ListBasis returns a reference to every basis.
func (s *Service) ListBasis(ctx context.Context) ([]*sdk.Ref_Basis, error) {
	return s.store.ListBasis(ctx)
}

// resolveBasis finds the basis a reference describes; field names the reference in errors.
// A resource_id that matches nothing falls back to name and path when they are given.
func (s *Service) resolveBasis(ctx context.Context, field string, ref *sdk.Ref_Basis) (*vagrant.Basis, error) {
	if id := ref.GetResourceId(); id != "" {
		b, err := s.store.GetBasis(ctx, id)
		if err == nil || !errors.Is(err, ErrNotFound) || (ref.GetName() == "" && ref.GetPath() == "") {
			return b, err
		}
	}
	if ref.GetName() == "" && ref.GetPath() == "" {
		return nil, Invalid(field, "give its resource_id, name or path")
	}
	return s.store.FindBasis(ctx, BasisQuery{Name: ref.GetName(), Path: ref.GetPath()})
}

// parentMissing turns "the referenced parent does not exist" into a precondition failure of
// the request that referenced it (the request is well-formed; the registry lacks the parent).
func parentMissing(field string, err error) error {
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return Precondition(field, fmt.Sprintf("no %s with %s exists", nf.Resource, nf.Key))
	}
	return err
}

func emptyBasisRef(r *sdk.Ref_Basis) bool {
	return r.GetResourceId() == "" && r.GetName() == "" && r.GetPath() == ""
}
