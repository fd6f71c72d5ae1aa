package registry

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// maxTargetDepth bounds the walk up a parent chain that rejects cycles.
const maxTargetDepth = 64

// UpsertTarget creates or updates a target. Without a resource_id the target is matched by
// its project and name (upstream's fuzzy upsert): an existing one is updated, otherwise one
// is created. project is UpsertTargetRequest.project, used when target.project is empty
// (upstream reads only target.project). A target stays in the project it was created in.
func (s *Service) UpsertTarget(ctx context.Context, project *sdk.Ref_Project, t *vagrant.Target) (*vagrant.Target, error) {
	if t == nil {
		return nil, Invalid("target", "required")
	}
	t = proto.Clone(t).(*vagrant.Target)
	t.Subtargets = nil // derived from the subtargets' own parent
	if _, ok := vagrant.Operation_PhysicalState_name[int32(t.State)]; !ok {
		return nil, Invalid("target.state", fmt.Sprintf("unknown physical state %d", t.State))
	}
	if emptyProjectRef(t.Project) {
		t.Project = project
	}
	var proj *vagrant.Project
	if !emptyProjectRef(t.Project) {
		var err error
		if proj, err = s.resolveProject(ctx, "target.project", t.Project); err != nil {
			return nil, parentMissing("target.project", err)
		}
	}
	t.Project = nil
	if t.ResourceId != "" {
		return s.updateTarget(ctx, t.ResourceId, proj, t)
	}
	switch {
	case proj == nil:
		return nil, Invalid("target.project", "required to create a target")
	case t.Name == "":
		return nil, Invalid("target.name", "required to create a target")
	}
	created, err := s.createTarget(ctx, proj, t)
	var pe *PreconditionError
	if errors.As(err, &pe) && pe.Field == "target.name" {
		// Another caller created the same (project, name) since we looked: update theirs.
		created, err = s.createTarget(ctx, proj, t)
	}
	return created, err
}

// createTarget updates the target of proj named t.Name when there is one, else creates it.
func (s *Service) createTarget(ctx context.Context, proj *vagrant.Project, t *vagrant.Target) (*vagrant.Target, error) {
	existing, err := s.store.FindTarget(ctx, TargetQuery{ProjectID: proj.ResourceId, Name: t.Name})
	if err == nil {
		return s.updateTarget(ctx, existing.ResourceId, proj, t)
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	t = proto.Clone(t).(*vagrant.Target)
	if t.Parent, err = s.parentRef(ctx, t.Parent, proj.ResourceId, ""); err != nil {
		return nil, err
	}
	if t.ResourceId, err = s.newID(); err != nil {
		return nil, err
	}
	t.Project = &sdk.Ref_Project{ResourceId: proj.ResourceId, Basis: &sdk.Ref_Basis{ResourceId: proj.GetBasis().GetResourceId()}}
	return s.store.CreateTarget(ctx, NewTarget(t))
}

// updateTarget writes the fields t sets onto target id.
func (s *Service) updateTarget(ctx context.Context, id string, proj *vagrant.Project, t *vagrant.Target) (*vagrant.Target, error) {
	cur, err := s.store.GetTarget(ctx, id)
	if err != nil {
		return nil, err
	}
	projectID := cur.GetProject().GetResourceId()
	if proj != nil && proj.ResourceId != projectID {
		return nil, Precondition("target.project", "a target cannot move to another project")
	}
	t = proto.Clone(t).(*vagrant.Target)
	if t.Parent, err = s.parentRef(ctx, t.Parent, projectID, id); err != nil {
		return nil, err
	}
	return s.store.UpdateTarget(ctx, id, func(before *vagrant.Target) (TargetChange, error) {
		return UpdatedTarget(before, t), nil
	})
}

// parentRef resolves a parent reference (by resource_id, or by name within the project) to
// a target of the same project that is not self nor one of self's descendants.
func (s *Service) parentRef(ctx context.Context, ref *sdk.Ref_Target, projectID, self string) (*sdk.Ref_Target, error) {
	if ref.GetResourceId() == "" && ref.GetName() == "" {
		return nil, nil
	}
	var parent *vagrant.Target
	var err error
	if ref.GetResourceId() != "" {
		parent, err = s.store.GetTarget(ctx, ref.GetResourceId())
	} else {
		parent, err = s.store.FindTarget(ctx, TargetQuery{ProjectID: projectID, Name: ref.GetName()})
	}
	if err != nil {
		return nil, parentMissing("target.parent", err)
	}
	if parent.GetProject().GetResourceId() != projectID {
		return nil, Precondition("target.parent", "must be a target of the same project")
	}
	for anc, depth := parent, 0; self != ""; depth++ {
		if anc.ResourceId == self {
			return nil, Precondition("target.parent", "would make the target its own ancestor")
		}
		if anc.GetParent().GetResourceId() == "" {
			break
		}
		if depth == maxTargetDepth {
			return nil, Precondition("target.parent", fmt.Sprintf("targets nest at most %d deep", maxTargetDepth))
		}
		if anc, err = s.store.GetTarget(ctx, anc.GetParent().GetResourceId()); err != nil {
			return nil, err
		}
	}
	return &sdk.Ref_Target{ResourceId: parent.ResourceId}, nil
}

// GetTarget returns the target ref.resource_id names.
func (s *Service) GetTarget(ctx context.Context, ref *sdk.Ref_Target) (*vagrant.Target, error) {
	if ref.GetResourceId() == "" {
		return nil, Invalid("target.resource_id", "required")
	}
	return s.store.GetTarget(ctx, ref.GetResourceId())
}

// FindTarget returns the target t describes: by resource_id, else by project and name, else
// by a prefix of its uuid (which must match exactly one target).
func (s *Service) FindTarget(ctx context.Context, t *vagrant.Target) (*vagrant.Target, error) {
	if t == nil {
		return nil, Invalid("target", "required")
	}
	byName := !emptyProjectRef(t.Project) && t.Name != ""
	if t.ResourceId != "" {
		got, err := s.store.GetTarget(ctx, t.ResourceId)
		if err == nil || !errors.Is(err, ErrNotFound) || (!byName && t.Uuid == "") {
			return got, err
		}
	}
	switch {
	case byName:
		proj, err := s.resolveProject(ctx, "target.project", t.Project)
		if err != nil {
			return nil, err
		}
		return s.store.FindTarget(ctx, TargetQuery{ProjectID: proj.ResourceId, Name: t.Name})
	case t.Uuid != "":
		return s.store.FindTarget(ctx, TargetQuery{UUIDPrefix: t.Uuid})
	}
	return nil, Invalid("target", "give its resource_id, its project and name, or (a prefix of) its uuid")
}

// ListTargets returns a reference to every target.
func (s *Service) ListTargets(ctx context.Context) ([]*sdk.Ref_Target, error) {
	return s.store.ListTargets(ctx)
}

// DeleteTarget deletes the target ref names (by resource_id, or by project and name).
// A target that does not exist is already deleted: no error, as upstream.
func (s *Service) DeleteTarget(ctx context.Context, ref *sdk.Ref_Target) error {
	id := ref.GetResourceId()
	if id == "" {
		if emptyProjectRef(ref.GetProject()) || ref.GetName() == "" {
			return Invalid("target", "give its resource_id, or its project and name")
		}
		t, err := s.FindTarget(ctx, &vagrant.Target{Project: ref.GetProject(), Name: ref.GetName()})
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		id = t.ResourceId
	}
	return s.store.DeleteTarget(ctx, id)
}
