package app_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func commandJob(target *sdk.Ref_Target, component *vagrant.Component) *vagrant.Job {
	return &vagrant.Job{TargetRunner: anyRunner(), Scope: &vagrant.Job_Target{Target: target},
		Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up", Component: component}}}
}

// unknownOperationJob is a noop job that also carries operation field 80: what a newer
// client's operation looks like to this server.
func unknownOperationJob() *vagrant.Job {
	j := &vagrant.Job{TargetRunner: anyRunner()}
	j.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 80, protowire.BytesType), nil))
	return j
}

// ValidateJob checks a new job and matches it against the online runners' components and
// by_id_only; it queues nothing.
func TestValidateJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	_, _, vm := registryFixture(t, c, ctx)
	cmd := startRunner(t, c, tok, "cmd", false,
		&vagrant.Component{Type: vagrant.Component_COMMAND, Name: "up"}, &vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "netns"})
	startRunner(t, c, tok, "local", true)

	ssh := commandJob(vm, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "ssh"})
	sshOnLocal := proto.CloneOf(ssh)
	sshOnLocal.TargetRunner = runnerRef("local")
	elsewhere := noopJob()
	elsewhere.TargetRunner = runnerRef("nobody")
	withID := noopJob()
	withID.Id = "01J00000000000000000000000"
	cases := []struct {
		name              string
		job               *vagrant.Job
		disableAssign     bool
		valid, assignable bool
		code              codes.Code
		msg               string
	}{
		{"noop", noopJob(), false, true, true, codes.OK, ""},
		{"command on a target", commandJob(vm, nil), false, true, true, codes.OK, ""},
		{"a component no runner has", ssh, false, true, false, codes.OK, ""},
		{"targeted at a by_id_only runner that claims nothing", sshOnLocal, false, true, true, codes.OK, ""},
		{"targeted at an unknown runner", elsewhere, false, true, false, codes.OK, ""},
		{"assignability not asked", noopJob(), true, true, false, codes.OK, ""},
		{"no job", nil, false, false, false, codes.InvalidArgument, "job: required"},
		{"an id", withID, false, false, false, codes.InvalidArgument, "job.id"},
		{"no target runner", &vagrant.Job{Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}, false, false, false, codes.InvalidArgument, "job.target_runner"},
		{"unknown operation", unknownOperationJob(), false, false, false, codes.Unimplemented, "operation field 80"},
	}
	for _, tc := range cases {
		resp := must(c.ValidateJob(ctx, &vagrant.ValidateJobRequest{Job: tc.job, DisableAssign: tc.disableAssign}))(t)
		st := resp.GetValidationError()
		if resp.GetValid() != tc.valid || resp.GetAssignable() != tc.assignable || codes.Code(st.GetCode()) != tc.code {
			t.Errorf("%s: valid %v assignable %v error %v; want %v %v %v", tc.name, resp.GetValid(), resp.GetAssignable(), st, tc.valid, tc.assignable, tc.code)
		}
		if tc.msg != "" && !strings.Contains(st.GetMessage(), tc.msg) {
			t.Errorf("%s: validation error %q lacks %q", tc.name, st.GetMessage(), tc.msg)
		}
	}
	if jobs := must(c.XListJobs(ctx, &vagrant.ListJobsRequest{}))(t).GetJobs(); len(jobs) != 0 {
		t.Fatalf("ValidateJob queued %d jobs", len(jobs))
	}

	// GetRunner returns the runner as registered.
	got := must(c.GetRunner(ctx, &vagrant.GetRunnerRequest{RunnerId: "cmd"}))(t)
	if got.GetId() != "cmd" || len(got.GetComponents()) != 2 || got.GetByIdOnly() {
		t.Fatalf("GetRunner: %v", got)
	}
	_, err := c.GetRunner(ctx, &vagrant.GetRunnerRequest{RunnerId: "nobody"})
	code(t, "unknown runner", err, codes.NotFound)
	_, err = c.GetRunner(ctx, &vagrant.GetRunnerRequest{})
	code(t, "runner without id", err, codes.InvalidArgument, "runner_id")

	// A runner whose RunnerConfig stream ends is offline: nothing can be assigned to it.
	cmd.stop()
	deadline := time.Now().Add(10 * time.Second)
	for must(c.ValidateJob(ctx, &vagrant.ValidateJobRequest{Job: commandJob(vm, nil)}))(t).GetAssignable() {
		if time.Now().After(deadline) {
			t.Fatal("the runner is still online after its RunnerConfig stream ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PruneOldJobs keeps the newest finished jobs (upstream kept the oldest) and every unfinished
// one; pruned jobs take their output with them.
func TestPruneOldJobsKeepsTheNewest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "PLINTH_VAGRANT_JOBS_KEPT=3")
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	r := startRunner(t, c, tok, "runner-1", false)
	var finished []string
	for range 5 {
		queue(t, c, ctx, noopJob())
		finished = append(finished, r.run(t, 10*time.Second).GetId())
	}
	pending := queue(t, c, ctx, noopJob())
	if n := outputRows(t, e, finished[:2]); n != 2 {
		t.Fatalf("%d output rows before pruning, want 2", n)
	}
	must(c.PruneOldJobs(ctx, &emptypb.Empty{}))(t)

	var left []string
	for _, j := range must(c.XListJobs(ctx, &vagrant.ListJobsRequest{}))(t).GetJobs() {
		left = append(left, j.GetId())
	}
	want := append(append([]string{}, finished[2:]...), pending)
	slices.Reverse(want) // _ListJobs answers newest first
	if !slices.Equal(left, want) {
		t.Fatalf("after pruning: %v, want the queued one and the 3 newest finished %v", left, want)
	}
	_, err := c.GetJob(ctx, &vagrant.GetJobRequest{JobId: finished[0]})
	code(t, "pruned job", err, codes.NotFound)
	stream, err := c.GetJobStream(ctx, &vagrant.GetJobStreamRequest{JobId: finished[1]})
	if err == nil {
		_, err = stream.Recv()
	}
	code(t, "stream of a pruned job", err, codes.NotFound)
	if got := summary(openJobStream(t, c, ctx, finished[2]).rest(t, 10*time.Second)); got[2] != "output[b] ran "+finished[2]+" on runner-1" {
		t.Fatalf("a kept job lost its output: %v", got)
	}
	if n := outputRows(t, e, finished[:2]); n != 0 {
		t.Fatalf("%d output rows of pruned jobs are left", n)
	}
}

// outputRows counts the stored output of jobs, straight from the database.
func outputRows(t *testing.T, e *env, jobs []string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM job_output WHERE job_id = ANY($1)`, jobs).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
