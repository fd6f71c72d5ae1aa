package app_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Malformed job requests and out-of-protocol runner messages get precise codes naming the
// field, and change nothing.
func TestJobRPCsRefuseBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)

	withID := noopJob()
	withID.Id = "01J00000000000000000000000"
	emptyRunnerID := noopJob()
	emptyRunnerID.TargetRunner = runnerRef("")
	noGitURL := noopJob()
	noGitURL.DataSource = &vagrant.Job_DataSource{Source: &vagrant.Job_DataSource_Git{Git: &vagrant.Job_Git{}}}
	queueCases := []struct {
		name    string
		req     *vagrant.QueueJobRequest
		code    codes.Code
		message string
	}{
		{"no job", &vagrant.QueueJobRequest{}, codes.InvalidArgument, "job: required"},
		{"an id", &vagrant.QueueJobRequest{Job: withID}, codes.InvalidArgument, "job.id"},
		{"no target runner", &vagrant.QueueJobRequest{Job: &vagrant.Job{Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}}, codes.InvalidArgument, "job.target_runner"},
		{"empty runner id", &vagrant.QueueJobRequest{Job: emptyRunnerID}, codes.InvalidArgument, "job.target_runner.id.id"},
		{"no operation", &vagrant.QueueJobRequest{Job: &vagrant.Job{TargetRunner: anyRunner()}}, codes.InvalidArgument, "job.operation"},
		{"unknown operation", &vagrant.QueueJobRequest{Job: unknownOperationJob()}, codes.Unimplemented, "operation field 80"},
		{"git without url", &vagrant.QueueJobRequest{Job: noGitURL}, codes.InvalidArgument, "job.data_source.git.url"},
		{"bad expires_in", &vagrant.QueueJobRequest{Job: noopJob(), ExpiresIn: "soon"}, codes.InvalidArgument, "expires_in"},
		{"negative expires_in", &vagrant.QueueJobRequest{Job: noopJob(), ExpiresIn: "-5s"}, codes.InvalidArgument, "expires_in"},
	}
	for _, tc := range queueCases {
		_, err := c.QueueJob(ctx, tc.req)
		code(t, tc.name, err, tc.code, tc.message)
	}
	_, err := c.GetJob(ctx, &vagrant.GetJobRequest{})
	code(t, "GetJob without id", err, codes.InvalidArgument, "job_id")
	_, err = c.GetJob(ctx, &vagrant.GetJobRequest{JobId: "01J00000000000000000000000"})
	code(t, "GetJob unknown", err, codes.NotFound)
	for name, id := range map[string]string{"without id": "", "unknown": "01J00000000000000000000000"} {
		stream, err := c.GetJobStream(ctx, &vagrant.GetJobStreamRequest{JobId: id})
		if err == nil {
			_, err = stream.Recv()
		}
		want := map[string]codes.Code{"without id": codes.InvalidArgument, "unknown": codes.NotFound}[name]
		code(t, "GetJobStream "+name, err, want)
	}

	// RunnerConfig: the first message must open a runner with an id.
	for _, tc := range []struct {
		name string
		req  *vagrant.RunnerConfigRequest
		code codes.Code
		msg  string
	}{
		{"no open", &vagrant.RunnerConfigRequest{}, codes.FailedPrecondition, "must be open"},
		{"no runner", &vagrant.RunnerConfigRequest{Event: &vagrant.RunnerConfigRequest_Open_{Open: &vagrant.RunnerConfigRequest_Open{}}}, codes.InvalidArgument, "open.runner"},
		{"no id", &vagrant.RunnerConfigRequest{Event: &vagrant.RunnerConfigRequest_Open_{Open: &vagrant.RunnerConfigRequest_Open{Runner: &vagrant.Runner{}}}}, codes.InvalidArgument, "runner.id"},
	} {
		stream, err := c.RunnerConfig(ctx)
		if err == nil {
			err = stream.Send(tc.req)
		}
		if err == nil {
			_, err = stream.Recv()
		}
		code(t, "RunnerConfig "+tc.name, err, tc.code, tc.msg)
	}

	// RunnerJobStream: request first, from a registered runner; then ack before anything else.
	ack := &vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Ack_{Ack: &vagrant.RunnerJobStreamRequest_Ack{}}}
	request := func(id string) *vagrant.RunnerJobStreamRequest {
		return &vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: id}}}
	}
	for _, tc := range []struct {
		name string
		req  *vagrant.RunnerJobStreamRequest
		code codes.Code
		msg  string
	}{
		{"ack first", ack, codes.FailedPrecondition, "must be request, got ack"},
		{"no runner id", request(""), codes.InvalidArgument, "request.runner_id"},
		{"unregistered runner", request("stranger"), codes.NotFound, "register it with RunnerConfig first"},
	} {
		stream, err := c.RunnerJobStream(ctx)
		if err == nil {
			err = stream.Send(tc.req)
		}
		if err == nil {
			_, err = stream.Recv()
		}
		code(t, "RunnerJobStream "+tc.name, err, tc.code, tc.msg)
	}
	if jobs := must(c.XListJobs(ctx, &vagrant.ListJobsRequest{}))(t).GetJobs(); len(jobs) != 0 {
		t.Fatalf("refused requests queued %d jobs", len(jobs))
	}

	r := startRunner(t, c, tok, "runner-1", false)
	id := queue(t, c, ctx, noopJob())
	s := r.take(t, 10*time.Second)
	s.sendComplete(nil) // complete before ack: refused, and the job goes back to the queue
	s.wantEndCode(codes.FailedPrecondition, "expected ack or error", "got complete")
	waitJob(t, c, ctx, id, vagrant.Job_QUEUED, 5*time.Second)
	s = r.take(t, 10*time.Second)
	s.ack()
	s.send(request("runner-1"))
	s.wantEndCode(codes.FailedPrecondition, "unexpected request while the job runs")
	if job := must(c.GetJob(ctx, &vagrant.GetJobRequest{JobId: id}))(t); job.GetState() != vagrant.Job_RUNNING {
		t.Fatalf("a protocol error ended the running job: %v", job)
	}
}
