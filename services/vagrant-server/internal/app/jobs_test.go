package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// registryFixture creates basis dev, its projects web and api, and target web/vm.
func registryFixture(t *testing.T, c vagrant.VagrantClient, ctx context.Context) (web, api *sdk.Ref_Project, vm *sdk.Ref_Target) {
	t.Helper()
	must(c.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "dev", Path: "/dev"}}))(t)
	web = &sdk.Ref_Project{Name: "web", Basis: &sdk.Ref_Basis{Name: "dev"}}
	api = &sdk.Ref_Project{Name: "api", Basis: &sdk.Ref_Basis{Name: "dev"}}
	must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "web", Path: "/web", Basis: web.Basis}}))(t)
	must(c.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "api", Path: "/api", Basis: api.Basis}}))(t)
	tg := must(c.UpsertTarget(ctx, &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "vm", Project: web}}))(t).GetTarget()
	return web, api, &sdk.Ref_Target{ResourceId: tg.GetResourceId()}
}

// A job goes queue → runner → output → complete; a job stream opened while it is queued
// sees all of it live, and one opened afterwards sees it buffered.
func TestJobRunsAndStreamsItsOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	_, _, vm := registryFixture(t, c, ctx)
	r := startRunner(t, c, tok, "runner-1", false)

	id := queue(t, c, ctx, targetJob(vm))
	live := openJobStream(t, c, ctx, id)
	if got := summary([]*vagrant.GetJobStreamResponse{live.next(t, 5*time.Second), live.next(t, 5*time.Second)}); !slices.Equal(got, []string{"open", "state UNKNOWN→QUEUED"}) {
		t.Fatalf("job stream of a queued job starts with %v", got)
	}
	expect := func(want string) {
		t.Helper()
		if got := summary([]*vagrant.GetJobStreamResponse{live.next(t, 10*time.Second)}); got[0] != want {
			t.Fatalf("live job stream: %q, want %q", got[0], want)
		}
	}
	s := r.take(t, 10*time.Second)
	if s.job.GetId() != id || s.job.GetState() != vagrant.Job_WAITING || s.job.GetTarget().GetResourceId() != vm.ResourceId {
		t.Fatalf("assignment: %v", s.job)
	}
	expect("state QUEUED→WAITING")
	s.ack()
	expect("state WAITING→RUNNING")
	s.output("hello", "world")
	expect("output hello|world")
	s.heartbeat()
	s.output("bye")
	expect("output bye")
	result := &vagrant.Job_Result{Init: &vagrant.Job_InitResult{Actions: []*vagrant.Job_Action{{Name: "up", Source: "netns"}}}}
	s.complete(result)
	msgs := live.rest(t, 10*time.Second)
	if diff := cmp.Diff([]string{"state RUNNING→SUCCESS", "complete 0"}, summary(msgs)); diff != "" {
		t.Fatalf("end of the live stream (-want +got):\n%s", diff)
	}
	if last := msgs[len(msgs)-1].GetComplete(); !proto.Equal(last.GetResult(), result) {
		t.Fatalf("Complete carries %v, want the result %v", last.GetResult(), result)
	}
	if st := msgs[0].GetState().GetJob(); st.GetState() != vagrant.Job_SUCCESS || !proto.Equal(st.GetResult(), result) {
		t.Fatalf("the last State event's job: %v", st)
	}

	job := must(c.GetJob(ctx, &vagrant.GetJobRequest{JobId: id}))(t)
	if job.GetState() != vagrant.Job_SUCCESS || job.GetAssignedRunner().GetId() != "runner-1" || !proto.Equal(job.GetResult(), result) ||
		job.GetAckTime() == nil || job.GetCompleteTime() == nil {
		t.Fatalf("finished job: %v", job)
	}
	after := summary(openJobStream(t, c, ctx, id).rest(t, 10*time.Second))
	if diff := cmp.Diff([]string{"open", "state UNKNOWN→SUCCESS", "output[b] hello|world|bye", "complete 0"}, after); diff != "" {
		t.Fatalf("stream of a finished job (-want +got):\n%s", diff)
	}
}

// Output is durable: after a restart on the same database a finished job still streams all
// of it, a queued job is still there and runs, and its stream is served by the new server.
func TestJobOutputSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, stop := e.startStoppable(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	r := startRunner(t, c, tok, "runner-1", false)
	failed := queue(t, c, ctx, noopJob())
	s := r.take(t, 10*time.Second)
	s.ack()
	s.output("step 1", "step 2")
	s.fail(&spb.Status{Code: int32(codes.Aborted), Message: "provider refused"})
	s.wantEnd(nil)
	waitJob(t, c, ctx, failed, vagrant.Job_ERROR, 5*time.Second)
	pending := queue(t, c, ctx, noopJob())
	stop()

	c2 := e.start(t)
	got := summary(openJobStream(t, c2, ctx, failed).rest(t, 10*time.Second))
	if diff := cmp.Diff([]string{"open", "state UNKNOWN→ERROR", "output[b] step 1|step 2", "complete 10"}, got); diff != "" {
		t.Fatalf("stream of a failed job after a restart (-want +got):\n%s", diff)
	}
	job := must(c2.GetJob(ctx, &vagrant.GetJobRequest{JobId: failed}))(t)
	if job.GetError().GetCode() != int32(codes.Aborted) || job.GetError().GetMessage() != "provider refused" {
		t.Fatalf("job error: %v", job.GetError())
	}
	r2 := startRunner(t, c2, tok, "runner-1", false) // reconnects after the restart
	if ran := r2.run(t, 10*time.Second); ran.GetId() != pending {
		t.Fatalf("after the restart the runner got %s, want the queued %s", ran.GetId(), pending)
	}
	got = summary(openJobStream(t, c2, ctx, pending).rest(t, 10*time.Second))
	if diff := cmp.Diff([]string{"open", "state UNKNOWN→SUCCESS", "output[b] ran " + pending + " on runner-1", "complete 0"}, got); diff != "" {
		t.Fatalf("stream of the job run after the restart (-want +got):\n%s", diff)
	}
}
