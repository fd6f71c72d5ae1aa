package app_test

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/grpc"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// _ListJobs has no paging upstream: its answer is bounded (newest first), so a standard
// client, which refuses messages over 4 MiB, always reads it.
func TestListJobsIsBoundedNewestFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_MAX_QUEUED_JOBS_PER_USER=0") // one token's 140 waiting jobs
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))
	// Each job carries the most labels a job may (64, values of 512 bytes): ~33 KiB, 4.6 MB
	// for 140.
	const jobs = 140
	pad := strings.Repeat("x", jobqueue.MaxLabelValueBytes)
	for i := range jobs {
		job := noopJob()
		job.TargetRunner = runnerRef("nobody")
		job.Labels = map[string]string{"n": strconv.Itoa(i)}
		for k := range jobqueue.MaxLabels - 1 {
			job.Labels["pad"+strconv.Itoa(k)] = pad
		}
		queue(t, c, ctx, job)
	}
	resp, err := c.XListJobs(ctx, &vagrant.ListJobsRequest{})
	if err != nil {
		t.Fatalf("_ListJobs of %d large jobs: %v", jobs, err)
	}
	got := resp.GetJobs()
	if len(got) == 0 || len(got) >= jobs || proto.Size(resp) > grpc.ListJobsMaxBytes {
		t.Fatalf("_ListJobs returned %d jobs, %d bytes; want fewer than %d within %d bytes", len(got), proto.Size(resp), jobs, grpc.ListJobsMaxBytes)
	}
	for i, j := range got {
		if want := strconv.Itoa(jobs - 1 - i); j.GetLabels()["n"] != want {
			t.Fatalf("job %d of the answer is job n=%s, want n=%s: newest first", i, j.GetLabels()["n"], want)
		}
	}
}
