package operation

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// validate checks that the job's scope exists on the server and, for a target, that this
// runner has its provider and can name its machine.
func (e *Executor) validate(ctx context.Context, job *vagrant.Job, out Output) (*vagrant.Job_Result, error) {
	switch {
	case job.GetTarget() != nil:
		m, err := e.machine(ctx, job.GetTarget(), nil)
		if err != nil {
			return nil, err
		}
		say(out, "target %s is valid: provider %s, machine %s", m.target.GetName(), m.provider.Name(), m.id)
	case job.GetProject() != nil:
		p, err := e.findProject(ctx, job.GetProject())
		if err != nil {
			return nil, err
		}
		say(out, "project %s is valid", p.GetName())
	case job.GetBasis() != nil:
		b, err := e.findBasis(ctx, job.GetBasis())
		if err != nil {
			return nil, err
		}
		say(out, "basis %s is valid", b.GetName())
	default:
		say(out, "the job has no scope: nothing to validate")
	}
	return &vagrant.Job_Result{Validate: &vagrant.Job_ValidateResult{}}, nil
}

// initBasis returns a reference to the job's basis, registering it when the server does not
// know it yet (by name and path), as Vagrant's runner does.
func (e *Executor) initBasis(ctx context.Context, job *vagrant.Job, out Output) (*vagrant.Job_Result, error) {
	ref := job.GetBasis()
	if ref == nil {
		return nil, status.Error(codes.InvalidArgument, "init_basis needs a job scoped to a basis (job.basis)")
	}
	b, err := e.findBasis(ctx, ref)
	if status.Code(err) == codes.FailedPrecondition && ref.GetResourceId() == "" {
		resp, uerr := e.server.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: ref.GetName(), Path: ref.GetPath()}})
		switch {
		case status.Code(uerr) == codes.FailedPrecondition:
			// Registered meanwhile (the job ran twice, or another job did it): use that one.
			b, err = e.findBasis(ctx, ref)
		case uerr != nil:
			return nil, serverError("register basis "+ref.GetName(), uerr)
		default:
			b, err = resp.GetBasis(), nil
			say(out, "registered basis %s", b.GetName())
		}
	}
	if err != nil {
		return nil, err
	}
	return &vagrant.Job_Result{Basis: &vagrant.Job_InitBasisResult{
		Basis: &sdk.Ref_Basis{ResourceId: b.GetResourceId(), Name: b.GetName(), Path: b.GetPath()},
	}}, nil
}

// initProject returns a reference to the job's project, registering it in its basis when the
// server does not know it yet.
func (e *Executor) initProject(ctx context.Context, job *vagrant.Job, out Output) (*vagrant.Job_Result, error) {
	ref := job.GetProject()
	if ref == nil {
		return nil, status.Error(codes.InvalidArgument, "init_project needs a job scoped to a project (job.project)")
	}
	p, err := e.findProject(ctx, ref)
	if status.Code(err) == codes.FailedPrecondition && ref.GetResourceId() == "" {
		resp, uerr := e.server.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{
			Name: ref.GetName(), Path: ref.GetPath(), Basis: ref.GetBasis()}})
		switch {
		case status.Code(uerr) == codes.FailedPrecondition:
			// Registered meanwhile (the job ran twice, or another job did it): use that one.
			p, err = e.findProject(ctx, ref)
		case uerr != nil:
			return nil, serverError("register project "+ref.GetName(), uerr)
		default:
			p, err = resp.GetProject(), nil
			say(out, "registered project %s", p.GetName())
		}
	}
	if err != nil {
		return nil, err
	}
	return &vagrant.Job_Result{Project: &vagrant.Job_InitProjectResult{Project: &sdk.Ref_Project{
		ResourceId: p.GetResourceId(), Name: p.GetName(), Path: p.GetPath(), Basis: p.GetBasis()}}}, nil
}

// findBasis looks a basis up; a missing one is FailedPrecondition (the job's scope is wrong).
func (e *Executor) findBasis(ctx context.Context, ref *sdk.Ref_Basis) (*vagrant.Basis, error) {
	resp, err := e.server.FindBasis(ctx, &vagrant.FindBasisRequest{Basis: &vagrant.Basis{
		ResourceId: ref.GetResourceId(), Name: ref.GetName(), Path: ref.GetPath()}})
	if status.Code(err) == codes.NotFound || (err == nil && resp.GetBasis() == nil) {
		return nil, status.Errorf(codes.FailedPrecondition, "basis %s is not registered with the server", refName(ref.GetName(), ref.GetResourceId()))
	}
	if err != nil {
		return nil, serverError("look up basis", err)
	}
	return resp.GetBasis(), nil
}

// findProject looks a project up; a missing one is FailedPrecondition.
func (e *Executor) findProject(ctx context.Context, ref *sdk.Ref_Project) (*vagrant.Project, error) {
	resp, err := e.server.FindProject(ctx, &vagrant.FindProjectRequest{Project: &vagrant.Project{
		ResourceId: ref.GetResourceId(), Name: ref.GetName(), Path: ref.GetPath(), Basis: ref.GetBasis()}})
	if status.Code(err) == codes.NotFound || (err == nil && resp.GetProject() == nil) {
		return nil, status.Errorf(codes.FailedPrecondition, "project %s is not registered with the server", refName(ref.GetName(), ref.GetResourceId()))
	}
	if err != nil {
		return nil, serverError("look up project", err)
	}
	return resp.GetProject(), nil
}

func refName(name, id string) string {
	if name != "" {
		return "\"" + name + "\""
	}
	return id
}
