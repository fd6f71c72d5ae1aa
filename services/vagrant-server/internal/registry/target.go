package registry

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
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
	return byID(ctx, "target.resource_id", ref.GetResourceId(), s.store.GetTarget)
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

// TargetChange is what one write of a target saves: the target as it is to be stored and,
// when the write changes the target's state, the target.state_changed event it raises. A
// TargetStore writes exactly this, the event in the transaction of the write (outbox); it
// decides nothing.
type TargetChange struct {
	Target *vagrant.Target
	// Event is nil when the write leaves the target's state as it was.
	Event *eventsv1.TargetStateChanged
}

// TargetState is what target.state_changed reports: the physical state and the state of the
// machine the provider recorded in Target.record.
type TargetState struct {
	Physical    vagrant.Operation_PhysicalState
	Machine     string
	Description string
}

// StateOf reads t's state. A record that does not hold a Target.Machine (the Ruby side may
// pack other types; records are opaque to the registry) has no machine state.
func StateOf(t *vagrant.Target) TargetState {
	s := TargetState{Physical: t.GetState()}
	m := &vagrant.Target_Machine{}
	if rec := t.GetRecord(); rec != nil && rec.MessageIs(m) && rec.UnmarshalTo(m) == nil {
		s.Machine, s.Description = m.GetState().GetId(), m.GetState().GetShortDescription()
	}
	return s
}

// changed reports whether going from s to after is a state change: a new physical or machine
// state. A new description alone is not one.
func (s TargetState) changed(after TargetState) bool {
	return s.Physical != after.Physical || s.Machine != after.Machine
}

// NewTarget is the change that creates t. t.Project names the project and its basis (the
// event carries both ids); a target created with a state announces it, from the zero state.
func NewTarget(t *vagrant.Target) TargetChange {
	return TargetChange{Target: t, Event: stateChange(TargetState{}, t)}
}

// UpdatedTarget is the change that writes the fields set in fields over before (an upsert
// replaces what the client sent and keeps the rest; see overlay). The target keeps its
// resource_id and project whatever fields says: a target never moves.
func UpdatedTarget(before, fields *vagrant.Target) TargetChange {
	after := proto.CloneOf(before)
	overlay(after, fields)
	after.ResourceId, after.Project = before.GetResourceId(), proto.CloneOf(before.GetProject())
	return TargetChange{Target: after, Event: stateChange(StateOf(before), after)}
}

// stateChange is target.state_changed for t, whose state was before, or nil when t's state is
// still before's.
func stateChange(before TargetState, t *vagrant.Target) *eventsv1.TargetStateChanged {
	after := StateOf(t)
	if !before.changed(after) {
		return nil
	}
	return &eventsv1.TargetStateChanged{
		TargetId:                t.GetResourceId(),
		Name:                    t.GetName(),
		ProjectId:               t.GetProject().GetResourceId(),
		BasisId:                 t.GetProject().GetBasis().GetResourceId(),
		Provider:                t.GetProvider(),
		State:                   eventsv1.TargetState(after.Physical),
		PreviousState:           eventsv1.TargetState(before.Physical),
		MachineState:            after.Machine,
		PreviousMachineState:    before.Machine,
		MachineStateDescription: after.Description,
	}
}
