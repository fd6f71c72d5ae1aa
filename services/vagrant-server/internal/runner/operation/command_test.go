package operation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/providertest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// fixture is an executor with a fake provider "fake" and one registered target "web".
func fixture(t *testing.T) (*operation.Executor, *registry, *providertest.Fake) {
	t.Helper()
	fake := providertest.New("fake")
	set, err := provider.NewSet(fake, providertest.New("other"))
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry()
	reg.addTarget(&vagrant.Target{ResourceId: "T1", Name: "web", Project: &sdk.Ref_Project{ResourceId: "P1", Name: "site"}})
	e, err := operation.New(operation.Options{Providers: set, DefaultProvider: "fake", Server: reg})
	if err != nil {
		t.Fatal(err)
	}
	return e, reg, fake
}

func commandJob(command string, args *sdk.Command_Arguments) *vagrant.Job {
	return &vagrant.Job{
		Id:        "J1",
		Scope:     &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "T1", Name: "web"}},
		Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: command, CliArgs: args}},
	}
}

func sshArgs(script string) *sdk.Command_Arguments {
	return &sdk.Command_Arguments{Flags: []*sdk.Command_Arguments_Flag{
		{Name: "c", Value: &sdk.Command_Arguments_Flag_String_{String_: script}}}}
}

// machineRecord unpacks the Target.Machine the last UpsertTarget carried.
func machineRecord(t *testing.T, tg *vagrant.Target) *vagrant.Target_Machine {
	t.Helper()
	m := &vagrant.Target_Machine{}
	if tg == nil || tg.Record == nil || tg.Record.UnmarshalTo(m) != nil {
		t.Fatalf("target update %v carries no Target.Machine record", tg)
	}
	return m
}

func TestCommandLifecycleReportsMachineState(t *testing.T) {
	e, reg, fake := fixture(t)
	ctx := context.Background()
	steps := []struct {
		command  string
		physical vagrant.Operation_PhysicalState
		state    string
	}{
		{"status", vagrant.Operation_NOT_CREATED, provider.StateNotCreated},
		{"up", vagrant.Operation_CREATED, provider.StateRunning},
		{"halt", vagrant.Operation_HALTED, provider.StatePoweroff},
		{"reload", vagrant.Operation_CREATED, provider.StateRunning},
		{"destroy", vagrant.Operation_DESTROYED, provider.StateNotCreated},
	}
	var machineID string
	for _, s := range steps {
		out := &recorder{}
		res, err := e.Execute(ctx, commandJob(s.command, nil), nil, out)
		if err != nil {
			t.Fatalf("%s: %v", s.command, err)
		}
		if !res.GetRun().GetRunResult() || res.GetRun().GetExitCode() != 0 || res.GetRun().GetRunError() != nil {
			t.Fatalf("%s: result %v, want success", s.command, res.GetRun())
		}
		up := reg.lastUpsert()
		m := machineRecord(t, up)
		if up.ResourceId != "T1" || up.State != s.physical || up.Provider != "fake" || m.GetState().GetId() != s.state {
			t.Errorf("%s: reported target %s state %s provider %q machine state %q; want T1 %s fake %q",
				s.command, up.ResourceId, up.State, up.Provider, m.GetState().GetId(), s.physical, s.state)
		}
		if machineID == "" {
			machineID = m.GetId()
		}
		if m.GetId() != machineID || len(machineID) != 10 {
			t.Errorf("%s: machine id %q, want the stable 10-character id %q", s.command, m.GetId(), machineID)
		}
		if !slices.ContainsFunc(out.lines(), func(l string) bool { return strings.Contains(l, "fake machine") }) {
			t.Errorf("%s: output %q does not report the machine state", s.command, out.lines())
		}
	}
	want := []string{"up " + machineID, "halt " + machineID, "halt " + machineID, "up " + machineID, "destroy " + machineID} // reload = halt + up
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Errorf("provider calls %v, want %v", got, want)
	}
}

func TestCommandSSHStreamsOutputAndExitCode(t *testing.T) {
	e, reg, fake := fixture(t)
	fake.ExecFunc = func(_ context.Context, _ string, c provider.Command) (int, error) {
		fmt.Fprint(c.Stdout, "line one\nline ")
		fmt.Fprint(c.Stdout, "two\nno newline")
		fmt.Fprintln(c.Stderr, "warning")
		return 3, nil
	}
	ctx := context.Background()
	if _, err := e.Execute(ctx, commandJob("up", nil), nil, &recorder{}); err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	res, err := e.Execute(ctx, commandJob("ssh", sshArgs("echo hi")), []string{"FOO=bar"}, out)
	if err != nil {
		t.Fatal(err)
	}
	run := res.GetRun()
	if run.GetRunResult() || run.GetExitCode() != 3 || status.FromProto(run.GetRunError()).Code() != codes.Unknown {
		t.Errorf("result %v: want run_result false, exit 3, run_error Unknown", run)
	}
	if got := out.raw(false); got != "line one\nline two\nno newline" {
		t.Errorf("stdout %q", got)
	}
	if got := out.raw(true); got != "warning\n" {
		t.Errorf("stderr %q", got)
	}
	execs := fake.Execs()
	if len(execs) != 1 || !slices.Equal(execs[0].Args, []string{"/bin/sh", "-c", "echo hi"}) || !slices.Equal(execs[0].Env, []string{"FOO=bar"}) {
		t.Errorf("provider ran %+v, want /bin/sh -c 'echo hi' with FOO=bar", execs)
	}
	if reg.lastUpsert() == nil {
		t.Error("ssh did not report the machine state")
	}
}

func TestCommandFailures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		prepare func(reg *registry, fake *providertest.Fake)
		job     *vagrant.Job
		code    codes.Code // the job's error; OK means a result with run_error
		runCode codes.Code
	}{
		{name: "unknown command", job: commandJob("package", nil), code: codes.Unimplemented},
		{name: "ssh without -c", job: commandJob("ssh", nil), code: codes.InvalidArgument},
		{name: "exec without a program", job: commandJob("exec", &sdk.Command_Arguments{}), code: codes.InvalidArgument},
		{name: "no target", code: codes.FailedPrecondition, job: &vagrant.Job{
			Scope:     &vagrant.Job_Project{Project: &sdk.Ref_Project{Name: "site"}},
			Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up"}}}},
		{name: "unregistered target", code: codes.FailedPrecondition, job: &vagrant.Job{
			Scope:     &vagrant.Job_Target{Target: &sdk.Ref_Target{ResourceId: "nope", Name: "nope"}},
			Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up"}}}},
		{name: "provider not on this runner", code: codes.FailedPrecondition, job: commandJob("up", nil),
			prepare: func(reg *registry, _ *providertest.Fake) { reg.targets["T1"].Provider = "virtualbox" }},
		{name: "state report refused", code: codes.PermissionDenied, job: commandJob("up", nil),
			prepare: func(reg *registry, _ *providertest.Fake) {
				reg.failUpsertTarget = status.Error(codes.PermissionDenied, "no")
			}},
		{name: "exec in a machine that is not running", job: commandJob("exec", &sdk.Command_Arguments{Args: []string{"true"}}),
			runCode: codes.FailedPrecondition},
		{name: "git data source", code: codes.Unimplemented, job: &vagrant.Job{
			DataSource: &vagrant.Job_DataSource{Source: &vagrant.Job_DataSource_Git{Git: &vagrant.Job_Git{Url: "https://example.com/x"}}},
			Operation:  &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}},
		{name: "no operation", code: codes.InvalidArgument, job: &vagrant.Job{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, reg, fake := fixture(t)
			if tc.prepare != nil {
				tc.prepare(reg, fake)
			}
			res, err := e.Execute(ctx, tc.job, nil, &recorder{})
			if tc.code != codes.OK {
				if status.Code(err) != tc.code {
					t.Fatalf("error %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			run := res.GetRun()
			if run.GetRunResult() || run.GetExitCode() != 1 || status.FromProto(run.GetRunError()).Code() != tc.runCode {
				t.Errorf("result %v, want run_result false, exit 1, run_error %s", run, tc.runCode)
			}
		})
	}
}

func TestCommandProviderFromComponentAndRecord(t *testing.T) {
	e, reg, _ := fixture(t)
	job := commandJob("up", nil)
	job.GetCommand().Component = &vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "other"}
	if _, err := e.Execute(context.Background(), job, nil, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if p := reg.lastUpsert().Provider; p != "other" {
		t.Errorf("provider %q, want the job component's \"other\"", p)
	}
	// A machine id recorded on the target is kept (not re-derived).
	rec := machineRecord(t, reg.lastUpsert())
	rec.Id = "custom1"
	reg.targets["T1"].Record, _ = anyOf(rec)
	if _, err := e.Execute(context.Background(), commandJob("status", nil), nil, &recorder{}); err != nil {
		t.Fatal(err)
	}
	if id := machineRecord(t, reg.lastUpsert()).GetId(); id != "custom1" {
		t.Errorf("machine id %q, want the recorded custom1", id)
	}
}

func TestCommandCanceled(t *testing.T) {
	e, _, fake := fixture(t)
	fake.ExecFunc = func(ctx context.Context, _ string, _ provider.Command) (int, error) {
		<-ctx.Done()
		return 137, context.Cause(ctx)
	}
	if _, err := e.Execute(context.Background(), commandJob("up", nil), nil, &recorder{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(provider.ErrKilled)
	_, err := e.Execute(ctx, commandJob("exec", &sdk.Command_Arguments{Args: []string{"sleep", "9"}}), nil, &recorder{})
	if !errors.Is(err, provider.ErrKilled) {
		t.Errorf("error %v, want the cancel cause", err)
	}
}
