// Package registry holds the rules of the Vagrant server's resource registry (bases,
// projects, targets and boxes): identity (a ULID resource_id assigned on create and never
// changed), uniqueness, how Find resolves a partial description, and how an upsert merges into
// what is stored. Storage is the Store interface; every backend passes registrytest.
package registry

import (
	"context"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// Store persists the registry. Messages go in and come out as the wire types: Any payloads
// (Target.record, the Args.Hash entries inside configurations) are kept as opaque protobuf
// bytes and returned unchanged. Reads fill the derived fields (Basis.projects,
// Project.basis/targets, Target.project/parent/subtargets) from the stored relations. Writes
// read only the resource_id of Project.basis and Target.project (on create; the parent never
// changes) and of Target.parent, and ignore the other derived fields.
type Store interface {
	BasisStore
	ProjectStore
	TargetStore
	BoxStore
}

// BasisStore persists bases. Names and paths are each unique.
type BasisStore interface {
	// CreateBasis inserts b, whose ResourceId the caller assigned, and returns it as stored.
	// A taken name or path is a *PreconditionError naming the field.
	CreateBasis(ctx context.Context, b *vagrant.Basis) (*vagrant.Basis, error)
	// UpdateBasis loads basis id, lets update change it and writes it back, all in one
	// transaction holding the row, so concurrent upserts never lose each other's fields.
	// *NotFoundError when there is no such basis; update's error is returned unchanged.
	UpdateBasis(ctx context.Context, id string, update func(*vagrant.Basis) error) (*vagrant.Basis, error)
	// GetBasis returns basis id or a *NotFoundError.
	GetBasis(ctx context.Context, id string) (*vagrant.Basis, error)
	// FindBasis returns the basis matching every non-empty field of q, or a *NotFoundError.
	FindBasis(ctx context.Context, q BasisQuery) (*vagrant.Basis, error)
	// ListBasis returns a reference to every basis, oldest first.
	ListBasis(ctx context.Context) ([]*sdk.Ref_Basis, error)
}

// ProjectStore persists projects. Within a basis, names and paths are each unique; a project
// never moves to another basis.
type ProjectStore interface {
	// CreateProject inserts p; p.Basis.ResourceId names an existing basis.
	CreateProject(ctx context.Context, p *vagrant.Project) (*vagrant.Project, error)
	// UpdateProject is UpdateBasis for projects; the basis is not changed.
	UpdateProject(ctx context.Context, id string, update func(*vagrant.Project) error) (*vagrant.Project, error)
	// GetProject returns project id or a *NotFoundError.
	GetProject(ctx context.Context, id string) (*vagrant.Project, error)
	// FindProject returns the project of q.BasisID matching q's non-empty Name and Path.
	FindProject(ctx context.Context, q ProjectQuery) (*vagrant.Project, error)
	// ListProjects returns a reference to every project (with its basis), oldest first.
	ListProjects(ctx context.Context) ([]*sdk.Ref_Project, error)
}

// TargetStore persists targets. Names are unique within a project, uuids (when set)
// everywhere; a target never moves to another project.
type TargetStore interface {
	// CreateTarget inserts c.Target (see NewTarget) and writes c.Event, when there is one,
	// in the same transaction; c.Target.Project.ResourceId names an existing project and
	// c.Target.Parent.ResourceId, when set, a target of the same project.
	CreateTarget(ctx context.Context, c TargetChange) (*vagrant.Target, error)
	// UpdateTarget loads target id, passes it to update and writes the change update returns
	// (see UpdatedTarget) — the target and its event — all in one transaction holding the
	// row. The project is not changed. *NotFoundError when there is no such target; update's
	// error is returned unchanged and nothing is written.
	UpdateTarget(ctx context.Context, id string, update func(before *vagrant.Target) (TargetChange, error)) (*vagrant.Target, error)
	// GetTarget returns target id or a *NotFoundError.
	GetTarget(ctx context.Context, id string) (*vagrant.Target, error)
	// FindTarget returns the target of q.ProjectID named q.Name, or, with q.UUIDPrefix, the
	// one target whose uuid starts with it (*PreconditionError when several do).
	FindTarget(ctx context.Context, q TargetQuery) (*vagrant.Target, error)
	// ListTargets returns a reference to every target (with project and basis), oldest first.
	ListTargets(ctx context.Context) ([]*sdk.Ref_Target, error)
	// DeleteTarget removes target id; its subtargets lose their parent. Deleting a missing
	// target is not an error (upstream's DeleteTarget is idempotent).
	DeleteTarget(ctx context.Context, id string) error
}

// BoxStore persists boxes. (name, version, provider) is unique, and so is the directory.
type BoxStore interface {
	// CreateBox inserts b.
	CreateBox(ctx context.Context, b *vagrant.Box) (*vagrant.Box, error)
	// UpdateBox is UpdateBasis for boxes.
	UpdateBox(ctx context.Context, id string, update func(*vagrant.Box) error) (*vagrant.Box, error)
	// GetBox returns box id or a *NotFoundError.
	GetBox(ctx context.Context, id string) (*vagrant.Box, error)
	// BoxesNamed returns every version of the box name for provider.
	BoxesNamed(ctx context.Context, name, provider string) ([]*vagrant.Box, error)
	// ListBoxes returns a reference to every box, oldest first.
	ListBoxes(ctx context.Context) ([]*sdk.Ref_Box, error)
	// DeleteBox removes box id; a missing box is not an error.
	DeleteBox(ctx context.Context, id string) error
}

// BasisQuery selects a basis by every non-empty field (at least one must be set).
type BasisQuery struct {
	Name, Path string
}

// ProjectQuery selects a project of BasisID by every non-empty field of Name and Path.
type ProjectQuery struct {
	BasisID    string
	Name, Path string
}

// TargetQuery selects a target by ProjectID and Name, or else by UUIDPrefix.
type TargetQuery struct {
	ProjectID, Name string
	UUIDPrefix      string
}
