package registry

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// UpsertProject creates p when it has no resource_id (basis, name and path are required) and
// otherwise updates the stored project with the fields p sets. A project stays in the basis
// it was created in.
func (s *Service) UpsertProject(ctx context.Context, p *vagrant.Project) (*vagrant.Project, error) {
	if p == nil {
		return nil, Invalid("project", "required")
	}
	p = proto.Clone(p).(*vagrant.Project)
	p.Targets = nil // derived from the targets' own project
	var basis *vagrant.Basis
	if !emptyBasisRef(p.Basis) {
		var err error
		if basis, err = s.resolveBasis(ctx, "project.basis", p.Basis); err != nil {
			return nil, parentMissing("project.basis", err)
		}
	}
	p.Basis = nil
	if p.ResourceId != "" {
		return s.store.UpdateProject(ctx, p.ResourceId, func(cur *vagrant.Project) error {
			if basis != nil && basis.ResourceId != cur.GetBasis().GetResourceId() {
				return Precondition("project.basis", "a project cannot move to another basis")
			}
			overlay(cur, p)
			return nil
		})
	}
	switch {
	case basis == nil:
		return nil, Invalid("project.basis", "required to create a project")
	case p.Name == "":
		return nil, Invalid("project.name", "required to create a project")
	case p.Path == "":
		return nil, Invalid("project.path", "required to create a project")
	}
	id, err := s.newID()
	if err != nil {
		return nil, err
	}
	p.ResourceId = id
	p.Basis = &sdk.Ref_Basis{ResourceId: basis.ResourceId}
	return s.store.CreateProject(ctx, p)
}

// GetProject returns the project ref.resource_id names.
func (s *Service) GetProject(ctx context.Context, ref *sdk.Ref_Project) (*vagrant.Project, error) {
	return byID(ctx, "project.resource_id", ref.GetResourceId(), s.store.GetProject)
}

// FindProject returns the project p describes: by resource_id, else by name and/or path
// within the basis p.basis describes.
func (s *Service) FindProject(ctx context.Context, p *vagrant.Project) (*vagrant.Project, error) {
	if p == nil {
		return nil, Invalid("project", "required")
	}
	return s.resolveProject(ctx, "project", &sdk.Ref_Project{
		ResourceId: p.ResourceId, Name: p.Name, Path: p.Path, Basis: p.Basis,
	})
}

// ListProjects returns a reference to every project.
func (s *Service) ListProjects(ctx context.Context) ([]*sdk.Ref_Project, error) {
	return s.store.ListProjects(ctx)
}

// resolveProject finds the project a reference describes; field names it in errors.
func (s *Service) resolveProject(ctx context.Context, field string, ref *sdk.Ref_Project) (*vagrant.Project, error) {
	byName := ref.GetName() != "" || ref.GetPath() != ""
	if id := ref.GetResourceId(); id != "" {
		p, err := s.store.GetProject(ctx, id)
		if err == nil || !errors.Is(err, ErrNotFound) || !byName {
			return p, err
		}
	}
	if !byName {
		return nil, Invalid(field, "give its resource_id, or its basis and name or path")
	}
	if emptyBasisRef(ref.GetBasis()) {
		return nil, Invalid(field+".basis", "required to find a project by name or path")
	}
	basis, err := s.resolveBasis(ctx, field+".basis", ref.GetBasis())
	if err != nil {
		return nil, err
	}
	return s.store.FindProject(ctx, ProjectQuery{BasisID: basis.ResourceId, Name: ref.GetName(), Path: ref.GetPath()})
}

func emptyProjectRef(r *sdk.Ref_Project) bool {
	return r.GetResourceId() == "" && r.GetName() == "" && r.GetPath() == ""
}
