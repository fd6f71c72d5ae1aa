package runner_test

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/providertest"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner"
)

// blockingFake is a provider whose `exec block NAME` commands report NAME on started and run
// until the test closes release (or the job is canceled); other commands end at once.
func blockingFake() (fake *providertest.Fake, started chan string, release chan struct{}) {
	fake = providertest.New("fake")
	started, release = make(chan string, 16), make(chan struct{})
	fake.ExecFunc = func(ctx context.Context, _ string, c provider.Command) (int, error) {
		if len(c.Args) != 2 || c.Args[0] != "block" {
			_, err := io.WriteString(c.Stdout, "quick\n")
			return 0, err
		}
		started <- c.Args[1]
		select {
		case <-release:
			return 0, nil
		case <-ctx.Done():
			return 143, context.Cause(ctx)
		}
	}
	return fake, started, release
}

func blockArgs(name string) *sdk.Command_Arguments {
	return &sdk.Command_Arguments{Args: []string{"block", name}}
}

// awaitStarted waits until every job in names has started its command.
func awaitStarted(t *testing.T, started <-chan string, names ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case n := <-started:
			delete(want, n)
		case <-timeout:
			t.Fatalf("jobs %v did not start while the others run: the runner does not run them at once", want)
		}
	}
}

func jobState(t *testing.T, c vagrant.VagrantClient, token, id string) *vagrant.Job {
	t.Helper()
	job, err := c.GetJob(withAuth(t, token), &vagrant.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// Two jobs run at once on one runner id, each on its own stream with its own heartbeats and
// cancel: canceling one leaves the other running to its end.
func TestSlotsRunJobsAtOnce(t *testing.T) {
	client, addr, token, target := realServer(t)
	fake, started, release := blockingFake()
	r := startRealRunner(t, addr, token, fake, runner.Options{ID: "slots-" + t.Name(), Slots: 2})
	if _, done := runCommand(t, client, token, target, "up", nil); done.GetError() != nil {
		t.Fatalf("up: %v", done)
	}

	a := queueCommand(t, client, token, target, "exec", blockArgs("A"))
	b := queueCommand(t, client, token, target, "exec", blockArgs("B"))
	awaitStarted(t, started, "A", "B")
	if st := r.Status(); len(st.Jobs) != 2 || st.Slots != 2 {
		t.Errorf("status %+v: want 2 of 2 slots busy", st)
	}
	// Heartbeats of both streams keep both jobs alive past several intervals.
	time.Sleep(time.Second)
	for _, id := range []string{a, b} {
		if job := jobState(t, client, token, id); job.GetState() != vagrant.Job_RUNNING || job.GetAssignedRunner().GetId() != r.Status().ID {
			t.Fatalf("job %s: %s on %q, want RUNNING on this runner", id, job.GetState(), job.GetAssignedRunner().GetId())
		}
	}

	if _, err := client.CancelJob(withAuth(t, token), &vagrant.CancelJobRequest{JobId: a}); err != nil {
		t.Fatal(err)
	}
	if _, done := follow(t, client, token, a); status.FromProto(done.GetError()).Code() != codes.Canceled {
		t.Fatalf("canceled job A ended with %v, want Canceled", done)
	}
	if job := jobState(t, client, token, b); job.GetState() != vagrant.Job_RUNNING {
		t.Fatalf("job B is %s after A was canceled, want RUNNING", job.GetState())
	}
	close(release)
	if _, done := follow(t, client, token, b); done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() {
		t.Fatalf("job B ended with %v, want success", done)
	}
	waitFor(t, "both slots free", func() bool { return len(r.Status().Jobs) == 0 })
}

// A job targeting the reserved id runs while every general slot is busy with long jobs, and
// the reserved id never takes a job for any runner.
func TestReservedIDRunsWhileGeneralSlotsBusy(t *testing.T) {
	client, addr, token, target := realServer(t)
	fake, started, release := blockingFake()
	defer close(release)
	journal, _ := runner.OpenJournal("")
	general := startRealRunner(t, addr, token, fake, runner.Options{ID: "general-" + t.Name(), Slots: 2, Journal: journal})
	reserved := startRealRunner(t, addr, token, fake, runner.Options{ID: "kaas-" + t.Name(), ByIDOnly: true, Slots: 1, Journal: journal})
	if _, done := runCommand(t, client, token, target, "up", nil); done.GetError() != nil {
		t.Fatalf("up: %v", done)
	}

	queueCommand(t, client, token, target, "exec", blockArgs("user-1"))
	queueCommand(t, client, token, target, "exec", blockArgs("user-2"))
	awaitStarted(t, started, "user-1", "user-2")
	waiting := queueCommand(t, client, token, target, "exec", blockArgs("user-3"))

	forKaas := &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: reserved.Status().ID}}}
	id := queueFor(t, client, token, forKaas, target, "exec", &sdk.Command_Arguments{Args: []string{"true"}})
	out, done := follow(t, client, token, id)
	if done.GetError() != nil || !done.GetResult().GetRun().GetRunResult() || out == "" {
		t.Fatalf("job for the reserved id ended with %v (output %q) while the general slots were busy", done, out)
	}
	if job := jobState(t, client, token, id); job.GetAssignedRunner().GetId() != reserved.Status().ID {
		t.Errorf("job for the reserved id ran on %q", job.GetAssignedRunner().GetId())
	}
	if job := jobState(t, client, token, waiting); job.GetState() != vagrant.Job_QUEUED {
		t.Errorf("user job beyond the general slots is %s on %q, want QUEUED: the reserved id must not take it",
			job.GetState(), job.GetAssignedRunner().GetId())
	}
	if st := general.Status(); len(st.Jobs) != 2 {
		t.Errorf("general runner status %+v: want both slots still busy", st)
	}
}
