package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// journeyVagrantJob: a Vagrant user gets a login token of their own through the gateway,
// queues jobs there, and follows their output from the launcher's vagrant-runner back through
// the gateway (GetJobStream). As root the job is a real command in a netns machine.
func (s *journeySuite) journeyVagrantJob(t *testing.T) {
	s.requireService(t, "vagrant-server")
	_, runnerAdmin, ok := s.service("vagrant-runner")
	if !ok {
		skipOrFail(t, "vagrant-runner is not running in this suite (%s)", s.describeServices())
	}
	checkRunnerRegistered(t, runnerAdmin)
	runnerID, err := os.ReadFile(filepath.Join(s.home, "vagrant-runner", "id"))
	if err != nil {
		t.Fatalf("the runner's id: %v", err)
	}
	v := vagrantpb.NewVagrantClient(s.gw)
	gen, err := v.GenerateLoginToken(vagrantCtx(callCtx(t), s.vagrantToken(t)), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("GenerateLoginToken through the gateway: %v", err)
	}
	token := gen.GetToken()
	if token == "" || token == s.vagrantToken(t) {
		t.Fatalf("GenerateLoginToken answered %q, want a new token", token)
	}

	t.Run("Noop", func(t *testing.T) {
		id := s.queueJob(t, v, token, &vagrantpb.Job{Operation: &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}}})
		out, done := followJob(t, v, token, id)
		if done.GetError() != nil {
			t.Fatalf("noop job ended with %v\noutput:\n%s", done.GetError(), out)
		}
		if strings.TrimSpace(out) == "" {
			t.Errorf("noop job streamed no output through the gateway")
		}
		s.checkRanOnRunner(t, v, token, id, strings.TrimSpace(string(runnerID)))
	})

	// The console follows a job in the browser: gRPC-Web server streaming, with Vagrant's
	// protocol header and token.
	t.Run("FollowOverGRPCWeb", func(t *testing.T) {
		id := s.queueJob(t, v, token, &vagrantpb.Job{Operation: &vagrantpb.Job_Noop_{Noop: &vagrantpb.Job_Noop{}}})
		stream := connect.NewClient[vagrantpb.GetJobStreamRequest, vagrantpb.GetJobStreamResponse](
			&http.Client{Timeout: 2 * callTimeout}, "http://"+s.endpoints.Gateway+"/hashicorp.vagrant.Vagrant/GetJobStream",
			connect.WithGRPCWeb())
		req := connect.NewRequest(&vagrantpb.GetJobStreamRequest{JobId: id})
		req.Header().Set("Client-Api-Protocol", "1,1")
		req.Header().Set("Authorization", token)
		events, err := stream.CallServerStream(callCtx(t), req)
		if err != nil {
			t.Fatalf("GetJobStream over gRPC-Web: %v", err)
		}
		defer events.Close()
		var lines int
		var done *vagrantpb.GetJobStreamResponse_Complete
		for events.Receive() {
			lines += len(events.Msg().GetTerminal().GetEvents())
			if c := events.Msg().GetComplete(); c != nil {
				done = c
			}
		}
		if err := events.Err(); err != nil {
			t.Fatalf("GetJobStream over gRPC-Web ended with %v", err)
		}
		if done == nil || done.GetError() != nil || lines == 0 {
			t.Errorf("GetJobStream over gRPC-Web: %d output events, complete %v; want output and success", lines, done)
		}
	})
	// A browser on another origin (the console served elsewhere, a dev server) must first be
	// allowed to send Vagrant's protocol header, or it never makes the call above.
	t.Run("BrowserMaySendVagrantHeaders", func(t *testing.T) {
		s.checkPreflightAllows(t, "/hashicorp.vagrant.Vagrant/GetJobStream",
			"authorization", "client-api-protocol", "content-type", "x-grpc-web", "x-user-agent")
	})

	t.Run("CommandInMachine", func(t *testing.T) {
		if os.Geteuid() != 0 {
			skipOrFail(t, "the runner's netns machines need root")
		}
		if _, err := exec.LookPath("ip"); err != nil {
			skipOrFail(t, "the runner's netns machines need iproute2 (apt-get install iproute2)")
		}
		target := registerTarget(t, v, token, "journeys-"+randomHex(t, 3))
		scope := &vagrantpb.Job_Target{Target: &sdk.Ref_Target{ResourceId: target.GetResourceId(),
			Name: target.GetName(), Project: target.GetProject()}}
		command := func(name string, args *sdk.Command_Arguments) (string, *vagrantpb.GetJobStreamResponse_Complete) {
			id := s.queueJob(t, v, token, &vagrantpb.Job{Scope: scope,
				Operation: &vagrantpb.Job_Command{Command: &vagrantpb.Job_CommandOp{Command: name, CliArgs: args}}})
			return followJob(t, v, token, id)
		}
		t.Cleanup(func() { command("destroy", nil) })
		if out, done := command("up", nil); done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
			t.Fatalf("up: %v\noutput:\n%s", done, out)
		}
		marker := "journey-" + randomHex(t, 4)
		out, done := command("exec", &sdk.Command_Arguments{Args: []string{"/bin/sh", "-c", "echo " + marker + "; ip -o link show lo"}})
		if done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() || done.GetResult().GetRun().GetExitCode() != 0 {
			t.Fatalf("exec: %v\noutput:\n%s", done, out)
		}
		if !strings.Contains(out, marker+"\n") || !strings.Contains(out, "lo:") {
			t.Errorf("exec's output through the gateway lacks the command's output %q and the machine's lo:\n%s", marker, out)
		}
	})
}

// queueJob queues job for any runner through the gateway and returns its id.
func (s *journeySuite) queueJob(t *testing.T, v vagrantpb.VagrantClient, token string, job *vagrantpb.Job) string {
	t.Helper()
	job.TargetRunner = &vagrantpb.Ref_Runner{Target: &vagrantpb.Ref_Runner_Any{Any: &vagrantpb.Ref_RunnerAny{}}}
	q, err := v.QueueJob(vagrantCtx(callCtx(t), token), &vagrantpb.QueueJobRequest{Job: job, ExpiresIn: "2m"})
	if err != nil {
		t.Fatalf("QueueJob through the gateway: %v", err)
	}
	return q.GetJobId()
}

// followJob reads the job's GetJobStream through the gateway to its Complete, and returns the
// output (lines and raw command output) and the Complete.
func followJob(t *testing.T, v vagrantpb.VagrantClient, token, id string) (string, *vagrantpb.GetJobStreamResponse_Complete) {
	t.Helper()
	ctx, cancel := context.WithTimeout(vagrantCtx(context.Background(), token), 2*callTimeout)
	defer cancel()
	stream, err := v.GetJobStream(ctx, &vagrantpb.GetJobStreamRequest{JobId: id})
	if err != nil {
		t.Fatalf("GetJobStream through the gateway: %v", err)
	}
	var out strings.Builder
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("job %s: stream through the gateway ended before Complete: %v\noutput so far:\n%s", id, err, out.String())
		}
		for _, te := range ev.GetTerminal().GetEvents() {
			if raw := te.GetRaw(); raw != nil {
				out.Write(raw.GetData())
			} else if l := te.GetLine(); l != nil {
				out.WriteString(l.GetMsg() + "\n")
			}
		}
		if c := ev.GetComplete(); c != nil {
			return out.String(), c
		}
	}
}

// checkRanOnRunner requires the finished job to have been run by the launcher's runner.
func (s *journeySuite) checkRanOnRunner(t *testing.T, v vagrantpb.VagrantClient, token, id, runnerID string) {
	t.Helper()
	job, err := v.GetJob(vagrantCtx(callCtx(t), token), &vagrantpb.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatalf("GetJob through the gateway: %v", err)
	}
	if job.GetState() != vagrantpb.Job_SUCCESS || job.GetAssignedRunner().GetId() != runnerID {
		t.Errorf("job %s is %s on runner %q, want SUCCESS on the launcher's runner %q",
			id, job.GetState(), job.GetAssignedRunner().GetId(), runnerID)
	}
}

// registerTarget registers basis, project and target name through the gateway.
func registerTarget(t *testing.T, v vagrantpb.VagrantClient, token, name string) *vagrantpb.Target {
	t.Helper()
	ctx := vagrantCtx(callCtx(t), token)
	b, err := v.UpsertBasis(ctx, &vagrantpb.UpsertBasisRequest{Basis: &vagrantpb.Basis{Name: name, Path: "/srv/" + name}})
	if err != nil {
		t.Fatalf("UpsertBasis: %v", err)
	}
	p, err := v.UpsertProject(ctx, &vagrantpb.UpsertProjectRequest{Project: &vagrantpb.Project{Name: name, Path: "/srv/" + name + "/app",
		Basis: &sdk.Ref_Basis{ResourceId: b.GetBasis().GetResourceId()}}})
	if err != nil {
		t.Fatalf("UpsertProject: %v", err)
	}
	tg, err := v.UpsertTarget(ctx, &vagrantpb.UpsertTargetRequest{Target: &vagrantpb.Target{Name: name,
		Project: &sdk.Ref_Project{ResourceId: p.GetProject().GetResourceId()}}})
	if err != nil {
		t.Fatalf("UpsertTarget: %v", err)
	}
	return tg.GetTarget()
}
