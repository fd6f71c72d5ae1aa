package grpc

import (
	"context"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// QueueJob validates and queues a job and returns its id at once. The job needs no id, a
// target runner and an operation this server knows (an unknown one is Unimplemented);
// expires_in, a Go duration ("30s", "10m"), makes the job fail with DEADLINE_EXCEEDED if no
// runner has acknowledged it in that time. The job counts against the owner of the call's
// token (tokens.Caller.Owner: a Plinth user's, or the token that made it): one holding the
// queue's limit of unfinished jobs is refused with ResourceExhausted, nothing queued.
func (s *Server) QueueJob(ctx context.Context, req *vagrant.QueueJobRequest) (*vagrant.QueueJobResponse, error) {
	var expiresIn time.Duration
	if v := req.GetExpiresIn(); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, toStatus(ctx, s.log, input.Invalid("expires_in", "%s is not a duration; use a Go duration such as \"30s\" or \"10m\"", input.Quote(v)), "doing", "queue job")
		}
		expiresIn = d
	}
	caller, _ := tokens.CallerFrom(ctx) // the guard put it there; without one, owner "" counts too
	id, err := s.jobs.Queue(ctx, req.GetJob(), expiresIn, caller.Owner)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "queue job")
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
		return nil, toStatus(ctx, s.log, err, "doing", "validate job")
	}
	resp := &vagrant.ValidateJobResponse{Valid: v.Valid, Assignable: v.Assignable}
	if v.Err != nil {
		resp.ValidationError = status.Convert(toStatus(ctx, s.log, v.Err, "doing", "validate job")).Proto()
	}
	return resp, nil
}

// CancelJob cancels a job: a queued one ends at once (ERROR, CANCELED); an assigned or
// running one's runner is told (JobCancel) and the job ends when the runner reports; a
// finished one is left alone. It returns at once; GetJob or GetJobStream show the outcome.
func (s *Server) CancelJob(ctx context.Context, req *vagrant.CancelJobRequest) (*emptypb.Empty, error) {
	if err := input.Required("job_id", req.GetJobId(), maxID); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "cancel job")
	}
	if err := s.jobs.Cancel(ctx, req.GetJobId(), false); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "cancel job", "job_id", input.Quote(req.GetJobId()))
	}
	return &emptypb.Empty{}, nil
}

// GetJob returns a job with every server-set field. Asked while this replica commits the
// job's ack, it answers once the ack is committed (see pendingAcks).
func (s *Server) GetJob(ctx context.Context, req *vagrant.GetJobRequest) (*vagrant.Job, error) {
	if err := input.Required("job_id", req.GetJobId(), maxID); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get job")
	}
	if job := s.acks.await(ctx, req.GetJobId()); job != nil {
		return job, nil
	}
	job, err := s.jobs.Get(ctx, req.GetJobId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get job", "job_id", input.Quote(req.GetJobId()))
	}
	return job, nil
}

// Bounds of a _ListJobs answer. Upstream's request has no paging, and gRPC clients refuse a
// message over 4 MiB by default, so the answer holds the newest jobs only: at most
// ListJobsMax of them, and no more than ListJobsMaxBytes of encoded jobs.
const (
	ListJobsMax      = 1000
	ListJobsMaxBytes = 3 << 20
)

// XListJobs (_ListJobs) lists the newest jobs first, within ListJobsMax and ListJobsMaxBytes.
func (s *Server) XListJobs(ctx context.Context, _ *vagrant.ListJobsRequest) (*vagrant.ListJobsResponse, error) {
	jobs, err := s.jobs.List(ctx, jobqueue.Filter{Limit: ListJobsMax, NewestFirst: true})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "list jobs")
	}
	size := 0
	for i, j := range jobs {
		n := proto.Size(j) // plus its field tag and length prefix
		if size += n + protowire.SizeTag(1) + protowire.SizeVarint(uint64(n)); size > ListJobsMaxBytes {
			jobs = jobs[:i]
			break
		}
	}
	return &vagrant.ListJobsResponse{Jobs: jobs}, nil
}

// PruneOldJobs deletes finished jobs, with their output, except the newest JobsKept
// (upstream kept the oldest). Queued, waiting and running jobs are never pruned.
func (s *Server) PruneOldJobs(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	n, err := s.jobs.PruneOldJobs(ctx, s.jobsKept)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "prune jobs")
	}
	s.log.InfoContext(ctx, "pruned old jobs", "deleted", n, "kept", s.jobsKept)
	return &emptypb.Empty{}, nil
}
