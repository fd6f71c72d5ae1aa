package app_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/prototext"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
)

// TestJobsAPIListsBackupsAndRestoresWithProgress runs a real backup to a real S3 server and
// a restore from it, and reads both through plinth.lvmd.v1.JobService.
func TestJobsAPIListsBackupsAndRestoresWithProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 4 << 30})
	b := newBucket(t, e)
	a := e.start(t, e.config(t))
	jobs := jobspb.NewJobServiceClient(a.conn)
	ctx := ctxT(t)
	key := newKey()
	e.secrets = append(e.secrets, key)

	if res, err := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{}); err != nil || len(res.GetJobs()) != 0 || res.GetNextPageToken() != "" {
		t.Fatalf("a new node has no jobs: %v %v", res, err)
	}
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "src", SizeGb: 1}); err != nil {
		t.Fatal(err)
	}
	fill(t, e.vgs[0], "src", 1<<30)
	req := &lvmdpb.CreateBackupRequest{Backup: &lvmdpb.Backup{Name: "bk", VolumeHandle: "src",
		DataSource: &lvmdpb.DataSource{Type: &lvmdpb.DataSource_S3_{S3: b.source("jobs/bk", key)}}}}
	if _, err := a.lv.CreateBackup(ctx, req); err != nil {
		t.Fatal(err)
	}
	// While it runs the job is listed in progress, its bytes never beyond the volume's size.
	var job *jobspb.Job
	for {
		res, err := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{})
		if err != nil || len(res.GetJobs()) != 1 {
			t.Fatalf("ListJobs during the backup: %v %v", res, err)
		}
		job = res.GetJobs()[0]
		if job.GetBytesDone() > job.GetSizeBytes() || job.GetSizeBytes() != 1<<30 {
			t.Fatalf("progress %d of %d", job.GetBytesDone(), job.GetSizeBytes())
		}
		if job.GetState() != jobspb.JobState_JOB_STATE_IN_PROGRESS {
			break
		}
		if job.GetFinishTime() != nil {
			t.Fatalf("a running job has no finish time: %v", job)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job.GetState() != jobspb.JobState_JOB_STATE_COMPLETE || job.GetKind() != jobspb.JobKind_JOB_KIND_BACKUP ||
		job.GetName() != "bk" || job.GetVolumeHandle() != "src" || job.GetDeviceClass() != "ssd" || job.GetNode() != e.node ||
		job.GetBytesDone() != 1<<30 || !job.GetEncrypted() || job.GetMessage() != "" || job.GetAttempts() != 1 ||
		!strings.Contains(job.GetLocation(), b.name+"/jobs/bk") || job.GetFinishTime() == nil || job.GetStartTime() == nil ||
		job.GetFinishTime().AsTime().Before(job.GetStartTime().AsTime()) {
		t.Fatalf("finished backup job: %v", job)
	}
	got, err := jobs.GetJob(ctx, &jobspb.GetJobRequest{Id: job.GetId()})
	if err != nil || got.GetJob().GetId() != job.GetId() || got.GetJob().GetBytesDone() != 1<<30 {
		t.Fatalf("GetJob: %v %v", got, err)
	}

	// A restore is listed too, first (newest).
	if _, err := a.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: "dst", SizeGb: 1, DataSource: &lvmdpb.DataSource{
		SynchronousRestore: true, Type: &lvmdpb.DataSource_S3_{S3: b.source("jobs/bk", key)}}}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	res, err := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{PageSize: 1})
	if err != nil || len(res.GetJobs()) != 1 || res.GetNextPageToken() == "" {
		t.Fatalf("first page: %v %v", res, err)
	}
	r := res.GetJobs()[0]
	if r.GetKind() != jobspb.JobKind_JOB_KIND_RESTORE || r.GetName() != "dst" || r.GetState() != jobspb.JobState_JOB_STATE_COMPLETE ||
		r.GetBytesDone() != 1<<30 || r.GetSizeBytes() != 1<<30 {
		t.Fatalf("restore job: %v", r)
	}
	next, err := jobs.ListJobs(ctx, &jobspb.ListJobsRequest{PageSize: 1, PageToken: res.GetNextPageToken()})
	if err != nil || len(next.GetJobs()) != 1 || next.GetJobs()[0].GetId() != job.GetId() || next.GetNextPageToken() != "" {
		t.Fatalf("second page: %v %v", next, err)
	}
	// Never a credential or key in an answer.
	text := prototext.Format(res) + prototext.Format(next)
	for _, s := range e.secrets {
		if strings.Contains(text, s) {
			t.Fatalf("a secret is in the jobs API's answer")
		}
	}
	if strings.Contains(text, b.srv.AccessKeyID) {
		t.Fatal("the access key id is in the jobs API's answer")
	}

	// Refusals name the field; unknown jobs are NotFound.
	_, err = jobs.GetJob(ctx, &jobspb.GetJobRequest{Id: job.GetId() + 1000000})
	wantCode(t, err, codes.NotFound, "job not found")
	_, err = jobs.GetJob(ctx, &jobspb.GetJobRequest{})
	wantCode(t, err, codes.InvalidArgument, "id")
	_, err = jobs.ListJobs(ctx, &jobspb.ListJobsRequest{PageSize: -1})
	wantCode(t, err, codes.InvalidArgument, "page_size")
	_, err = jobs.ListJobs(ctx, &jobspb.ListJobsRequest{PageToken: "not-a-token"})
	wantCode(t, err, codes.InvalidArgument, "page_token")
}
