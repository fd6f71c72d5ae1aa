package grpc

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// QueueJob validates and queues a job and returns its id at once. The job needs no id, a
// target runner and an operation this server knows (an unknown one is Unimplemented);
// expires_in, a Go duration ("30s", "10m"), makes the job fail with DEADLINE_EXCEEDED if no
// runner has acknowledged it in that time.
func (s *Server) QueueJob(ctx context.Context, req *vagrant.QueueJobRequest) (*vagrant.QueueJobResponse, error) {
	var expiresIn time.Duration
	if v := req.GetExpiresIn(); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "expires_in: %q is not a duration; use a Go duration such as \"30s\" or \"10m\"", v)
		}
		expiresIn = d
	}
	id, err := s.jobs.Queue(ctx, req.GetJob(), expiresIn)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &vagrant.QueueJobResponse{JobId: id}, nil
}

// ValidateJob checks a new job as QueueJob would, without queueing it, and (unless
// disable_assign) whether a registered, online runner could take it now, matching the
// runners' components and by_id_only. Upstream looked the job up by id, which a new job
// does not have, so its ValidateJob always failed. validation_error carries the code
// QueueJob would answer with.
func (s *Server) ValidateJob(ctx context.Context, req *vagrant.ValidateJobRequest) (*vagrant.ValidateJobResponse, error) {
	v, err := s.jobs.Validate(ctx, req.GetJob(), !req.GetDisableAssign())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	resp := &vagrant.ValidateJobResponse{Valid: v.Valid, Assignable: v.Assignable}
	if v.Err != nil {
		resp.ValidationError = status.Convert(toStatus(ctx, s.log, v.Err)).Proto()
	}
	return resp, nil
}

// CancelJob cancels a job: a queued one ends at once (ERROR, CANCELED); an assigned or
// running one's runner is told (JobCancel) and the job ends when the runner reports; a
// finished one is left alone. It returns at once; GetJob or GetJobStream show the outcome.
func (s *Server) CancelJob(ctx context.Context, req *vagrant.CancelJobRequest) (*emptypb.Empty, error) {
	if req.GetJobId() == "" {
		return nil, status.Error(codes.InvalidArgument, "job_id: required")
	}
	if err := s.jobs.Cancel(ctx, req.GetJobId(), false); err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &emptypb.Empty{}, nil
}

// GetJob returns a job with every server-set field.
func (s *Server) GetJob(ctx context.Context, req *vagrant.GetJobRequest) (*vagrant.Job, error) {
	if req.GetJobId() == "" {
		return nil, status.Error(codes.InvalidArgument, "job_id: required")
	}
	job, err := s.jobs.Get(ctx, req.GetJobId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return job, nil
}

// XListJobs (_ListJobs) lists every job, oldest first.
func (s *Server) XListJobs(ctx context.Context, _ *vagrant.ListJobsRequest) (*vagrant.ListJobsResponse, error) {
	jobs, err := s.jobs.List(ctx, jobqueue.Filter{})
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &vagrant.ListJobsResponse{Jobs: jobs}, nil
}

// PruneOldJobs deletes finished jobs, with their output, except the newest JobsKept
// (upstream kept the oldest). Queued, waiting and running jobs are never pruned.
func (s *Server) PruneOldJobs(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	n, err := s.jobs.PruneOldJobs(ctx, s.jobsKept)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	s.log.InfoContext(ctx, "pruned old jobs", "deleted", n, "kept", s.jobsKept)
	return &emptypb.Empty{}, nil
}
