package grpc

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
)

// jobsPaging is ListJobs' paging; the token is "<started_at in Unix microseconds>.<id>" of
// the previous page's last job: Postgres keeps microseconds, so the cursor is exact.
var jobsPaging = input.Paging{Default: 50, Max: 500, MaxKey: 40, Call: "ListJobs"}

// JobReader reads this agent's jobs (the store).
type JobReader interface {
	// JobByID returns node's job id, or backup.ErrJobNotFound.
	JobByID(ctx context.Context, node string, id int64) (backup.Job, error)
	// JobsPage returns up to limit jobs of node, newest start first, after the cursor.
	JobsPage(ctx context.Context, node string, after *backup.JobCursor, limit int) ([]backup.Job, error)
}

// JobServer implements plinth.lvmd.v1.JobService: the node's backup and restore jobs as the
// store records them (progress is recorded by the running job every few seconds), and the
// restore, deletion and dismissal of a listed job (job_actions.go).
type JobServer struct {
	jobspb.UnimplementedJobServiceServer
	jobs   JobReader
	runner *backup.Runner
	s3     *S3Default
	node   string
	log    *slog.Logger
}

// NewJobServer serves the jobs of node; runner restores and deletes them, with s3 (may be
// nil) the agent's default store.
func NewJobServer(jobs JobReader, runner *backup.Runner, s3 *S3Default, node string, log *slog.Logger) *JobServer {
	return &JobServer{jobs: jobs, runner: runner, s3: s3, node: node, log: log}
}

// ListJobs returns a page of the node's jobs, newest first.
func (s *JobServer) ListJobs(ctx context.Context, req *jobspb.ListJobsRequest) (*jobspb.ListJobsResponse, error) {
	size, err := jobsPaging.Size(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	var after *backup.JobCursor // nil: the first page
	if _, err := jobsPaging.Key(req.GetPageToken(), func(k string) (ok bool) { after, ok = parseJobKey(k); return ok }); err != nil {
		return nil, err
	}
	jobs, err := s.jobs.JobsPage(ctx, s.node, after, size+1)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "ListJobs")
	}
	jobs, next := input.Page(jobs, size, jobKey)
	resp := &jobspb.ListJobsResponse{NextPageToken: next}
	resp.Jobs = make([]*jobspb.Job, len(jobs))
	for i, j := range jobs {
		resp.Jobs[i] = jobPB(j)
	}
	return resp, nil
}

// GetJob returns one job of the node.
func (s *JobServer) GetJob(ctx context.Context, req *jobspb.GetJobRequest) (*jobspb.GetJobResponse, error) {
	if req.GetId() <= 0 {
		return nil, input.Invalid("id", "must be a job id (Job.id, a positive number)")
	}
	j, err := s.jobs.JobByID(ctx, s.node, req.GetId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "GetJob", "id", req.GetId())
	}
	return &jobspb.GetJobResponse{Job: jobPB(j)}, nil
}

// jobKey is the page key of a job (see jobsPaging).
func jobKey(j backup.Job) string { return fmt.Sprintf("%d.%d", j.StartedAt.UnixMicro(), j.ID) }

// parseJobKey reads a jobKey; nil for "" (the first page).
func parseJobKey(key string) (*backup.JobCursor, bool) {
	if key == "" {
		return nil, true
	}
	us, id, ok := strings.Cut(key, ".")
	if !ok {
		return nil, false
	}
	micros, err1 := strconv.ParseInt(us, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 {
		return nil, false
	}
	return &backup.JobCursor{StartedAt: time.UnixMicro(micros), ID: n}, true
}

func jobPB(j backup.Job) *jobspb.Job {
	out := &jobspb.Job{Id: j.ID, Name: j.Name, VolumeHandle: j.VolumeHandle, DeviceClass: j.DeviceClass, Node: j.Node,
		BytesDone: j.BytesDone, SizeBytes: j.SizeBytes, Location: j.Location, Encrypted: j.Encrypted, Message: j.Message,
		Retryable: j.Retryable, Attempts: int32(j.Attempts), CreateTime: timestamppb.New(j.CreatedAt),
		StartTime: timestamppb.New(j.StartedAt), UpdateTime: timestamppb.New(j.UpdatedAt), DefaultStore: j.Store.Default}
	switch j.Kind {
	case backup.KindBackup:
		out.Kind = jobspb.JobKind_JOB_KIND_BACKUP
	case backup.KindRestore:
		out.Kind = jobspb.JobKind_JOB_KIND_RESTORE
	}
	switch j.State {
	case backup.InProgress:
		out.State = jobspb.JobState_JOB_STATE_IN_PROGRESS
	case backup.Complete:
		out.State = jobspb.JobState_JOB_STATE_COMPLETE
	case backup.Failed:
		out.State = jobspb.JobState_JOB_STATE_ERROR
	}
	if !j.FinishedAt.IsZero() {
		out.FinishTime = timestamppb.New(j.FinishedAt)
	}
	return out
}
