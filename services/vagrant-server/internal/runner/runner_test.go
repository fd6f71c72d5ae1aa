package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/providertest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

const testToken = "login-token-for-tests"

// harness is a runner on a fake provider talking to a testServer.
type harness struct {
	srv    *testServer
	runner *runner.Runner
	fake   *providertest.Fake
	cancel context.CancelFunc
	done   chan struct{}
}

type harnessOptions struct {
	token       func() (string, error)
	grace       time.Duration
	beforeStart func(*testServer)
	serverToken string
}

func startRunner(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	if o.serverToken == "" {
		o.serverToken = testToken
	}
	if o.token == nil {
		o.token = runner.TokenSource(testToken, "")
	}
	srv, addr := newTestServer(t, o.serverToken)
	srv.targets["T1"] = &vagrant.Target{ResourceId: "T1", Name: "web"}
	if o.beforeStart != nil {
		o.beforeStart(srv)
	}
	fake := providertest.New("fake")
	set, err := provider.NewSet(fake)
	if err != nil {
		t.Fatal(err)
	}
	creds := runner.NewCredentials(o.token)
	conn, err := runner.Dial(addr, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := vagrant.NewVagrantClient(conn)
	exec, err := operation.New(operation.Options{Providers: set, DefaultProvider: "fake", Server: client})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Options{
		ID: "runner-1", ByIDOnly: true, Client: client, Credentials: creds, Executor: exec,
		BaseEnv: []string{"HOME=/root"}, Heartbeat: 20 * time.Millisecond, ShutdownGrace: o.grace,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{srv: srv, runner: r, fake: fake, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(h.done); _ = r.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// stop ends Run and waits for it.
func (h *harness) stop() {
	h.cancel()
	<-h.done
}

func (h *harness) registration(t *testing.T) *vagrant.Runner {
	t.Helper()
	select {
	case r := <-h.srv.registered:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("runner did not register; status %+v", h.runner.Status())
		return nil
	}
}

// finish collects the events of the running job up to its Complete or Error.
func (h *harness) finish(t *testing.T) []*vagrant.RunnerJobStreamRequest {
	t.Helper()
	var evs []*vagrant.RunnerJobStreamRequest
	for {
		select {
		case ev := <-h.srv.events:
			evs = append(evs, ev)
			if ev.GetComplete() != nil || ev.GetError() != nil {
				return evs
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("job did not end; events so far: %v", evs)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func noopJob(id string) *vagrant.Job {
	return &vagrant.Job{Id: id, Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}
}

func sshJob(id, script string) *vagrant.Job {
	return &vagrant.Job{
		Id:    id,
		Scope: &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "T1", Name: "web"}},
		Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "ssh", CliArgs: &sdk.Command_Arguments{
			Flags: []*sdk.Command_Arguments_Flag{{Name: "command", Value: &sdk.Command_Arguments_Flag_String_{String_: script}}}}}},
	}
}

func upJob(id string) *vagrant.Job {
	j := sshJob(id, "")
	j.GetCommand().Command, j.GetCommand().CliArgs = "up", nil
	return j
}

func TestRunnerRegistersAndRunsCommandJob(t *testing.T) {
	h := startRunner(t, harnessOptions{beforeStart: func(s *testServer) {
		s.configVars = []*vagrant.ConfigVar{
			{Name: "GREETING", Value: "hi", Scope: &vagrant.ConfigVar_Runner{Runner: &vagrant.Ref_Runner{
				Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: "runner-1"}}}}},
			{Name: "OTHER_RUNNER", Value: "x", Scope: &vagrant.ConfigVar_Runner{Runner: &vagrant.Ref_Runner{
				Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: "runner-2"}}}}},
		}
	}})
	var gotEnv []string
	h.fake.ExecFunc = func(_ context.Context, _ string, c provider.Command) (int, error) {
		gotEnv = c.Env
		fmt.Fprintln(c.Stdout, "hello from the machine")
		fmt.Fprintln(c.Stderr, "a warning")
		time.Sleep(150 * time.Millisecond) // several heartbeat intervals
		return 0, nil
	}

	reg := h.registration(t)
	if reg.Id != "runner-1" || !reg.ByIdOnly {
		t.Errorf("registered %v, want id runner-1, by_id_only", reg)
	}
	hasComponent := func(typ vagrant.Component_Type, name string) bool {
		return slices.ContainsFunc(reg.Components, func(c *vagrant.Component) bool { return c.Type == typ && c.Name == name })
	}
	if !hasComponent(vagrant.Component_COMMAND, "up") || !hasComponent(vagrant.Component_COMMAND, "ssh") || !hasComponent(vagrant.Component_PROVIDER, "fake") {
		t.Errorf("components %v, want COMMAND up/ssh and PROVIDER fake", reg.Components)
	}
	waitFor(t, "registered status", func() bool { return h.runner.Status().Registered })

	h.srv.jobs <- upJob("job-up")
	if evs := h.finish(t); evs[len(evs)-1].GetComplete() == nil {
		t.Fatalf("up ended with %v", evs[len(evs)-1])
	}
	h.srv.jobs <- sshJob("job-ssh", "echo hello")
	evs := h.finish(t)

	if evs[0].GetAck() == nil {
		t.Errorf("first event %v, want Ack", evs[0])
	}
	var stdout, stderr string
	heartbeats := 0
	for _, ev := range evs {
		for _, te := range ev.GetTerminal().GetEvents() {
			if te.Timestamp == nil {
				t.Errorf("terminal event without timestamp: %v", te)
			}
			if raw := te.GetRaw(); raw != nil && raw.Stderr {
				stderr += string(raw.Data)
			} else if raw != nil {
				stdout += string(raw.Data)
			}
		}
		if ev.GetHeartbeat() != nil {
			heartbeats++
		}
	}
	if stdout != "hello from the machine\n" || stderr != "a warning\n" {
		t.Errorf("output stdout %q stderr %q", stdout, stderr)
	}
	if heartbeats == 0 {
		t.Error("no heartbeat during a job that ran for several heartbeat intervals")
	}
	run := evs[len(evs)-1].GetComplete().GetResult().GetRun()
	if !run.GetRunResult() || run.GetExitCode() != 0 {
		t.Errorf("complete %v, want a successful command result", evs[len(evs)-1])
	}
	if !slices.Contains(gotEnv, "GREETING=hi") || slices.Contains(gotEnv, "OTHER_RUNNER=x") || !slices.Contains(gotEnv, "HOME=/root") {
		t.Errorf("command env %v: want HOME and GREETING (this runner's variable), not OTHER_RUNNER", gotEnv)
	}
	for _, kv := range gotEnv {
		if strings.Contains(kv, testToken) {
			t.Errorf("the login token leaked into the command environment: %q", kv)
		}
	}
	h.srv.mu.Lock()
	requests, upserts := slices.Clone(h.srv.requests), slices.Clone(h.srv.upserts)
	h.srv.mu.Unlock()
	if len(requests) < 2 || requests[0] != "runner-1" {
		t.Errorf("job requests %v, want runner-1's", requests)
	}
	if len(upserts) != 2 || upserts[1].State != vagrant.Operation_CREATED || upserts[1].Provider != "fake" {
		t.Errorf("target updates %v, want the machine reported CREATED by fake after each command", upserts)
	}
	waitFor(t, "job cleared from status", func() bool { return len(h.runner.Status().Jobs) == 0 })
}

func TestRunnerObeysCancel(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			h := startRunner(t, harnessOptions{})
			started := make(chan struct{})
			var cause error
			h.fake.ExecFunc = func(ctx context.Context, _ string, _ provider.Command) (int, error) {
				close(started)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return 143, cause
			}
			h.srv.jobs <- upJob("job-up")
			h.finish(t)
			h.srv.jobs <- sshJob("job-long", "sleep 600")
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("command did not start")
			}
			h.srv.cancels <- &vagrant.RunnerJobStreamResponse_JobCancel{Force: force}
			evs := h.finish(t)
			last := evs[len(evs)-1].GetError()
			if status.FromProto(last.GetError()).Code() != codes.Canceled {
				t.Fatalf("job ended with %v, want Error Canceled", evs[len(evs)-1])
			}
			if killed := errors.Is(cause, provider.ErrKilled); killed != force {
				t.Errorf("provider saw cause %v; forced cancel must be ErrKilled, graceful must not", cause)
			}
			// The runner takes the next job afterwards.
			h.srv.jobs <- noopJob("job-next")
			if evs := h.finish(t); evs[len(evs)-1].GetComplete() == nil {
				t.Errorf("next job ended with %v", evs[len(evs)-1])
			}
		})
	}
}

func TestRunnerRetriesFailedStreams(t *testing.T) {
	h := startRunner(t, harnessOptions{beforeStart: func(s *testServer) { s.failConfig, s.failJob = 3, 3 }})
	h.srv.jobs <- noopJob("job-1")
	if evs := h.finish(t); evs[len(evs)-1].GetComplete() == nil {
		t.Fatalf("job ended with %v", evs[len(evs)-1])
	}
	if config, job := h.srv.calls(); config < 4 || job < 4 {
		t.Errorf("RunnerConfig called %d times, RunnerJobStream %d: want retries past 3 failures each", config, job)
	}

	// The server drops the stream of a running job: the job is abandoned and the runner
	// reconnects for the next one.
	abandoned := make(chan error, 1)
	h.fake.ExecFunc = func(ctx context.Context, _ string, _ provider.Command) (int, error) {
		h.srv.dropJob <- struct{}{}
		<-ctx.Done()
		abandoned <- context.Cause(ctx)
		return -1, context.Cause(ctx)
	}
	h.srv.jobs <- upJob("job-up")
	h.finish(t)
	h.srv.jobs <- sshJob("job-dropped", "sleep 600")
	select {
	case cause := <-abandoned:
		if !strings.Contains(fmt.Sprint(cause), "lost") {
			t.Errorf("job canceled with %v, want the stream-lost cause", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("job went on after its stream was lost")
	}
	h.srv.jobs <- noopJob("job-after")
	evs := h.finish(t)
	for _, ev := range evs {
		if ev.GetComplete() == nil && ev.GetAck() == nil && ev.GetTerminal() == nil && ev.GetHeartbeat() == nil {
			t.Errorf("unexpected event %v", ev)
		}
	}
	if evs[len(evs)-1].GetComplete() == nil {
		t.Errorf("job after reconnect ended with %v", evs[len(evs)-1])
	}
}

func TestRunnerWaitsForTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	h := startRunner(t, harnessOptions{token: runner.TokenSource("", file)})
	waitFor(t, "no-token problem", func() bool { return strings.Contains(h.runner.Status().Problem, "no login token") })
	if config, _ := h.srv.calls(); config != 0 {
		t.Errorf("runner opened RunnerConfig %d times without a token", config)
	}
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.registration(t)
	h.srv.jobs <- noopJob("job-1")
	if evs := h.finish(t); evs[len(evs)-1].GetComplete() == nil {
		t.Fatalf("job ended with %v", evs[len(evs)-1])
	}
}

func TestRunnerReportsRefusedToken(t *testing.T) {
	h := startRunner(t, harnessOptions{serverToken: "another-token"})
	waitFor(t, "refused-token problem", func() bool {
		return strings.Contains(h.runner.Status().Problem, "refused the login token")
	})
	if h.runner.Status().Registered {
		t.Error("registered with a refused token")
	}
}

func TestRunnerShutdownLetsJobFinishOrAbortsIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jobTime time.Duration
		want    codes.Code // OK: Complete
	}{
		{"finishes within grace", 200 * time.Millisecond, codes.OK},
		{"aborted after grace", time.Hour, codes.Aborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startRunner(t, harnessOptions{grace: time.Second})
			started := make(chan struct{})
			h.fake.ExecFunc = func(ctx context.Context, _ string, _ provider.Command) (int, error) {
				close(started)
				select {
				case <-time.After(tc.jobTime):
					return 0, nil
				case <-ctx.Done():
					return -1, context.Cause(ctx)
				}
			}
			h.srv.jobs <- upJob("job-up")
			h.finish(t)
			h.srv.jobs <- sshJob("job-long", "work")
			<-started
			var wg sync.WaitGroup
			wg.Go(h.stop)
			evs := h.finish(t)
			wg.Wait()
			last := evs[len(evs)-1]
			if tc.want == codes.OK && last.GetComplete() == nil {
				t.Errorf("job ended with %v, want Complete", last)
			}
			if tc.want != codes.OK && status.FromProto(last.GetError().GetError()).Code() != tc.want {
				t.Errorf("job ended with %v, want Error %s", last, tc.want)
			}
		})
	}
}
