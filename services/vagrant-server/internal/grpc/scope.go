package grpc

import (
	"context"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

// resolveScope resolves a basis, project or target reference (the first one set) to the
// resource ids of it and everything it belongs to: a target's project and basis, a
// project's basis. Nothing set gives the zero Scope.
func (s *Server) resolveScope(ctx context.Context, b *sdk.Ref_Basis, p *sdk.Ref_Project, t *sdk.Ref_Target) (joboutput.Scope, error) {
	switch {
	case t != nil:
		tg, err := s.registry.FindTarget(ctx, &vagrant.Target{ResourceId: t.GetResourceId(), Name: t.GetName(), Project: t.GetProject()})
		if err != nil {
			return joboutput.Scope{}, err
		}
		return joboutput.Scope{TargetID: tg.GetResourceId(), ProjectID: tg.GetProject().GetResourceId(),
			BasisID: tg.GetProject().GetBasis().GetResourceId()}, nil
	case p != nil:
		pr, err := s.registry.FindProject(ctx, &vagrant.Project{ResourceId: p.GetResourceId(), Name: p.GetName(), Path: p.GetPath(), Basis: p.GetBasis()})
		if err != nil {
			return joboutput.Scope{}, err
		}
		return joboutput.Scope{ProjectID: pr.GetResourceId(), BasisID: pr.GetBasis().GetResourceId()}, nil
	case b != nil:
		bs, err := s.registry.FindBasis(ctx, &vagrant.Basis{ResourceId: b.GetResourceId(), Name: b.GetName(), Path: b.GetPath()})
		if err != nil {
			return joboutput.Scope{}, err
		}
		return joboutput.Scope{BasisID: bs.GetResourceId()}, nil
	}
	return joboutput.Scope{}, nil
}

// jobScope is the scope a job's output is logged under: the job's scope, else its command's.
// It is resolved when the job starts running, so init jobs that create their basis or project
// find it. A scope that does not resolve is logged and leaves the output out of log streams
// (GetJobStream still has it): the job itself must not fail for its log's sake.
func (s *Server) jobScope(ctx context.Context, job *vagrant.Job) joboutput.Scope {
	b, p, t := job.GetBasis(), job.GetProject(), job.GetTarget()
	if b == nil && p == nil && t == nil {
		c := job.GetCommand()
		b, p, t = c.GetBasis(), c.GetProject(), c.GetTarget()
	}
	scope, err := s.resolveScope(ctx, b, p, t)
	if err != nil {
		s.log.WarnContext(ctx, "job scope not found; its output is in no log stream", "job_id", job.GetId(), "error", err)
	}
	return scope
}
