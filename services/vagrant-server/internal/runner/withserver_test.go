package runner_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/app"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/providertest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// TestMain lets the tests against the real vagrant-server use a Postgres schema of their own.
func TestMain(m *testing.M) { testenv.Main(m) }

// testLog collects a test's logs and prints them if the test fails.
func testLog(t *testing.T) io.Writer {
	var b testenv.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", b.String())
		}
	})
	return &b
}

// realServer starts vagrant-server (Postgres, NATS, the real queue and streams), bootstraps
// its token and registers basis "home", project "site" and target "web".
func realServer(t *testing.T) (client vagrant.VagrantClient, addr, token string, target *vagrant.Target) {
	t.Helper()
	cfg := app.Defaults()
	if err := config.Load(&cfg, nil, []string{"PLINTH_DATABASE_URL=" + testenv.DB(t).URL, "PLINTH_NATS_URL=" + testenv.NATS(t),
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=off", "PLINTH_SHUTDOWN_TIMEOUT=5s"}); err != nil {
		t.Fatal(err)
	}
	log, err := telemetry.NewLogger(testLog(t), "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	client = vagrant.NewVagrantClient(servicetest.Run(t, a).Conn)
	tok, err := client.BootstrapToken(withAuth(t, ""), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("BootstrapToken: %v", err)
	}
	token = tok.GetToken()
	ctx := withAuth(t, token)
	b, err := client.UpsertBasis(ctx, &vagrant.UpsertBasisRequest{Basis: &vagrant.Basis{Name: "home", Path: "/home/me"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.UpsertProject(ctx, &vagrant.UpsertProjectRequest{Project: &vagrant.Project{Name: "site", Path: "/home/me/site",
		Basis: &sdk.Ref_Basis{ResourceId: b.GetBasis().GetResourceId()}}})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := client.UpsertTarget(ctx, &vagrant.UpsertTargetRequest{Target: &vagrant.Target{Name: "web",
		Project: &sdk.Ref_Project{ResourceId: p.GetProject().GetResourceId()}}})
	if err != nil {
		t.Fatal(err)
	}
	return client, a.GRPCAddr(), token, tg.GetTarget()
}

// withAuth is a call context carrying what a Vagrant client sends.
func withAuth(t *testing.T, token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// runRealRunner runs a vagrant-runner with provider p against the server at addr.
func runRealRunner(t *testing.T, addr, token string, p provider.Provider) {
	t.Helper()
	startRealRunner(t, addr, token, p, runner.Options{ID: "runner-" + t.Name()})
}

// startRealRunner runs runner o (its ID, ByIDOnly, Slots and Journal; the rest is filled in)
// with provider p against the server at addr, and waits until it is registered.
func startRealRunner(t *testing.T, addr, token string, p provider.Provider, o runner.Options) *runner.Runner {
	t.Helper()
	set, err := provider.NewSet(p)
	if err != nil {
		t.Fatal(err)
	}
	creds := runner.NewCredentials(runner.TokenSource(token, ""))
	conn, err := runner.Dial(addr, creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := vagrant.NewVagrantClient(conn)
	exec, err := operation.New(operation.Options{Providers: set, DefaultProvider: p.Name(), Server: client})
	if err != nil {
		t.Fatal(err)
	}
	log, err := telemetry.NewLogger(testLog(t), "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	o.Client, o.Credentials, o.Executor = client, creds, exec
	o.Heartbeat, o.MinBackoff, o.MaxBackoff = 200*time.Millisecond, 10*time.Millisecond, 200*time.Millisecond
	o.Logger = log.With("component", "runner", "id", o.ID)
	r, err := runner.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the runner to register with vagrant-server", func() bool { return r.Status().Registered })
	return r
}

// runCommand queues a command on target and follows it (follow).
func runCommand(t *testing.T, c vagrant.VagrantClient, token string, target *vagrant.Target, command string, args *sdk.Command_Arguments) (string, *vagrant.GetJobStreamResponse_Complete) {
	t.Helper()
	return follow(t, c, token, queueCommand(t, c, token, target, command, args))
}

// queueCommand queues a command on target for any runner and returns the job id.
func queueCommand(t *testing.T, c vagrant.VagrantClient, token string, target *vagrant.Target, command string, args *sdk.Command_Arguments) string {
	t.Helper()
	return queueFor(t, c, token, &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}, target, command, args)
}

// queueFor queues a command on target for runner and returns the job id.
func queueFor(t *testing.T, c vagrant.VagrantClient, token string, runner *vagrant.Ref_Runner, target *vagrant.Target, command string, args *sdk.Command_Arguments) string {
	t.Helper()
	ref := &sdk.Ref_Target{ResourceId: target.GetResourceId(), Name: target.GetName(), Project: target.GetProject()}
	q, err := c.QueueJob(withAuth(t, token), &vagrant.QueueJobRequest{Job: &vagrant.Job{
		Scope:        &vagrant.Job_Target{Target: ref},
		TargetRunner: runner,
		Operation:    &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: command, CliArgs: args}},
	}})
	if err != nil {
		t.Fatalf("QueueJob %s: %v", command, err)
	}
	return q.GetJobId()
}

// follow reads job id's GetJobStream to its end and returns the output lines and Complete.
func follow(t *testing.T, c vagrant.VagrantClient, token, id string) (string, *vagrant.GetJobStreamResponse_Complete) {
	t.Helper()
	stream, err := c.GetJobStream(withAuth(t, token), &vagrant.GetJobStreamRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("job %s stream ended before Complete: %v\noutput so far:\n%s", id, err, out.String())
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

func machineState(t *testing.T, c vagrant.VagrantClient, token string, target *vagrant.Target) (vagrant.Operation_PhysicalState, string) {
	t.Helper()
	resp, err := c.GetTarget(withAuth(t, token), &vagrant.GetTargetRequest{Target: &sdk.Ref_Target{ResourceId: target.GetResourceId()}})
	if err != nil {
		t.Fatal(err)
	}
	m := &vagrant.Target_Machine{}
	if err := resp.GetTarget().GetRecord().UnmarshalTo(m); err != nil {
		t.Fatalf("target record %v is not a Target.Machine: %v", resp.GetTarget().GetRecord(), err)
	}
	return resp.GetTarget().GetState(), m.GetState().GetId()
}

// TestWithRealServer runs a command job from QueueJob to Complete through the real
// vagrant-server and the real runner (on an in-memory provider, so it needs no root).
func TestWithRealServer(t *testing.T) {
	client, addr, token, target := realServer(t)
	fake := providertest.New("fake")
	fake.ExecFunc = func(_ context.Context, _ string, c provider.Command) (int, error) {
		_, err := io.WriteString(c.Stdout, "hello from "+strings.Join(c.Args, " ")+"\n")
		return 0, err
	}
	runRealRunner(t, addr, token, fake)

	if _, done := runCommand(t, client, token, target, "up", nil); done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
		t.Fatalf("up: %v", done)
	}
	out, done := runCommand(t, client, token, target, "ssh", &sdk.Command_Arguments{Flags: []*sdk.Command_Arguments_Flag{
		{Name: "c", Value: &sdk.Command_Arguments_Flag_String_{String_: "uname"}}}})
	if done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
		t.Fatalf("ssh: %v", done)
	}
	if !strings.Contains(out, "hello from /bin/sh -c uname\n") {
		t.Errorf("job output lacks the command's output:\n%s", out)
	}
	if state, machine := machineState(t, client, token, target); state != vagrant.Operation_CREATED || machine != provider.StateRunning {
		t.Errorf("target state %s, machine %q; want CREATED, running", state, machine)
	}

	// CancelJob reaches the runner through the server; the command stops and the job ends
	// canceled.
	started := make(chan struct{})
	fake.ExecFunc = func(ctx context.Context, _ string, c provider.Command) (int, error) {
		close(started)
		<-ctx.Done()
		return 143, context.Cause(ctx)
	}
	id := queueCommand(t, client, token, target, "exec", &sdk.Command_Arguments{Args: []string{"sleep", "600"}})
	ctx := withAuth(t, token)
	go func() {
		<-started
		_, _ = client.CancelJob(ctx, &vagrant.CancelJobRequest{JobId: id})
	}()
	_, done = follow(t, client, token, id)
	if got := status.FromProto(done.GetError()).Code(); got != codes.Canceled {
		t.Errorf("canceled job completed with %v, want Canceled", done)
	}
}

// TestNetnsWithRealServer drives a real netns machine through the real server: up, a command
// in it, destroy. It needs root and iproute2.
func TestNetnsWithRealServer(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "netns machines need root: run as root (CI does)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testenv.SkipOrFail(t, "iproute2 is not installed (apt-get install iproute2)")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	// Sandboxed, as the runner's machines are by default; its disks in a directory the
	// machines' uid can reach.
	disks := t.TempDir()
	for d := disks; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	p, err := netns.New(netns.Options{Bridge: "pltst" + suffix, Subnet: netip.MustParsePrefix("10.213.99.0/24"),
		NamespacePrefix: "plinthe2e-", LinkPrefix: "pte", LockDir: t.TempDir(),
		Sandbox: &netns.Sandbox{Dir: disks, State: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "pltst"+suffix).Run() })
	t.Cleanup(func() { // should the test fail before destroy
		list, _ := exec.Command("ip", "netns", "list").Output()
		for _, f := range strings.Fields(string(list)) {
			if strings.HasPrefix(f, "plinthe2e-") {
				_ = exec.Command("ip", "netns", "del", f).Run()
			}
		}
	})
	client, addr, token, target := realServer(t)
	runRealRunner(t, addr, token, p)

	if out, done := runCommand(t, client, token, target, "up", nil); done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
		t.Fatalf("up: %v\n%s", done, out)
	}
	out, done := runCommand(t, client, token, target, "ssh", &sdk.Command_Arguments{Flags: []*sdk.Command_Arguments_Flag{
		{Name: "command", Value: &sdk.Command_Arguments_Flag_String_{String_: "ip -4 addr show eth0"}}}})
	if done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() || !strings.Contains(out, "inet 10.213.99.") {
		t.Errorf("ssh: %v; output:\n%s", done, out)
	}
	if state, machine := machineState(t, client, token, target); state != vagrant.Operation_CREATED || machine != provider.StateRunning {
		t.Errorf("after up: target %s, machine %q", state, machine)
	}
	// The command ran in the sandbox: root inside, its own hostname, not the host's files.
	out, done = runCommand(t, client, token, target, "ssh", &sdk.Command_Arguments{Flags: []*sdk.Command_Arguments_Flag{
		{Name: "command", Value: &sdk.Command_Arguments_Flag_String_{String_: "id -u; ls /root | wc -l"}}}})
	if done.GetError() != nil || !strings.Contains(out, "\n0\n0\n") {
		t.Errorf("ssh in the sandbox: %v; output %q, want root with an empty /root", done, out)
	}
	if out, done := runCommand(t, client, token, target, "destroy", nil); done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
		t.Fatalf("destroy: %v\n%s", done, out)
	}
	if state, machine := machineState(t, client, token, target); state != vagrant.Operation_DESTROYED || machine != provider.StateNotCreated {
		t.Errorf("after destroy: target %s, machine %q", state, machine)
	}
	if list, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(list), "plinthe2e-") {
		t.Errorf("namespace left after destroy:\n%s", list)
	}
}
