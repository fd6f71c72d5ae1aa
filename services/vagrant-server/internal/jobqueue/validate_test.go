package jobqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// futureOperationJob is a job whose only operation is field 60, as a newer client would send.
func futureOperationJob(t *testing.T) *vagrant.Job {
	t.Helper()
	b, err := proto.Marshal(&vagrant.Job{TargetRunner: anyRunner()})
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendTag(b, 60, protowire.BytesType)
	b = protowire.AppendBytes(b, nil)
	job := &vagrant.Job{}
	if err := proto.Unmarshal(b, job); err != nil {
		t.Fatal(err)
	}
	return job
}

func TestQueueRejectsInvalidJobsNamingTheField(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q := openReplica(t, db.URL, fastOptions()).q
	withID := noopJob(anyRunner())
	withID.Id = "01ABC"
	emptyRunnerID := noopJob(runnerID(""))
	badGit := noopJob(anyRunner())
	badGit.DataSource = &vagrant.Job_DataSource{Source: &vagrant.Job_DataSource_Git{Git: &vagrant.Job_Git{Url: "https://example.com/r.git", Path: "../etc"}}}
	labelled := func(labels map[string]string) *vagrant.Job {
		j := noopJob(anyRunner())
		j.Labels = labels
		return j
	}
	tooMany := map[string]string{}
	for i := range jobqueue.MaxLabels + 1 {
		tooMany[fmt.Sprintf("k%d", i)] = "v"
	}
	cases := []struct {
		name  string
		job   *vagrant.Job
		field string
	}{
		{"too many labels", labelled(tooMany), "job.labels"},
		{"empty label key", labelled(map[string]string{"": "v"}), "job.labels"},
		{"label value too long", labelled(map[string]string{"k": strings.Repeat("v", jobqueue.MaxLabelValueBytes+1)}), "job.labels[k]"},
		{"nil job", nil, "job"},
		{"id supplied", withID, "job.id"},
		{"no target runner", noopJob(nil), "job.target_runner"},
		{"empty runner id", emptyRunnerID, "job.target_runner.id.id"},
		{"no operation", &vagrant.Job{TargetRunner: anyRunner()}, "job.operation"},
		{"git path escapes", badGit, "job.data_source.git.path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := q.Queue(context.Background(), c.job, 0, "token:test")
			if field := invalidField(err); field != c.field {
				t.Fatalf("Queue = %v; want an input error on %s", err, c.field)
			}
		})
	}
	atBounds := map[string]string{}
	for i := range jobqueue.MaxLabels {
		atBounds[fmt.Sprintf("%0255d", i)] = strings.Repeat("v", jobqueue.MaxLabelValueBytes)
	}
	if _, err := q.Queue(context.Background(), labelled(atBounds), 0, "token:test"); err != nil {
		t.Fatalf("a job with labels at every bound: %v", err)
	}
	_, err := q.Queue(context.Background(), noopJob(anyRunner()), -1, "token:test")
	if invalidField(err) != "expires_in" {
		t.Fatalf("negative expires_in: %v", err)
	}
	_, err = q.Queue(context.Background(), futureOperationJob(t), 0, "token:test")
	var uo *jobqueue.UnknownOperationError
	if !errors.Is(err, jobqueue.ErrUnknownOperation) || !errors.As(err, &uo) || uo.FieldNumber != 60 {
		t.Fatalf("unknown operation: %v; want ErrUnknownOperation naming field 60", err)
	}
	if jobs, _ := q.List(context.Background(), jobqueue.Filter{}); len(jobs) != 1 {
		t.Fatalf("invalid jobs were queued: %d jobs, want only the one at the bounds", len(jobs))
	}
}

func TestRequiredComponents(t *testing.T) {
	t.Parallel()
	target := &sdk.Ref_Target{ResourceId: "t1"}
	cases := []struct {
		name string
		job  *vagrant.Job
		want []jobqueue.Requirement
	}{
		{"noop", noopJob(anyRunner()), nil},
		{"init", &vagrant.Job{Operation: &vagrant.Job_Init{Init: &vagrant.Job_InitOp{}}}, nil},
		{"docs", &vagrant.Job{Operation: &vagrant.Job_Docs{Docs: &vagrant.Job_DocsOp{}}}, nil},
		{"auth all", &vagrant.Job{Operation: &vagrant.Job_Auth{Auth: &vagrant.Job_AuthOp{}}}, nil},
		{"auth one", &vagrant.Job{Operation: &vagrant.Job_Auth{Auth: &vagrant.Job_AuthOp{
			Component: &vagrant.Ref_Component{Type: vagrant.Component_AUTHENTICATOR, Name: "cloud"}}}},
			[]jobqueue.Requirement{{Type: vagrant.Component_AUTHENTICATOR, Name: "cloud"}}},
		{"command on project", &vagrant.Job{Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "box"}}},
			[]jobqueue.Requirement{{Type: vagrant.Component_COMMAND}}},
		{"command on target", &vagrant.Job{Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{
			Command: "up", Scope: &vagrant.Job_CommandOp_Target{Target: target}}}},
			[]jobqueue.Requirement{{Type: vagrant.Component_COMMAND}, {Type: vagrant.Component_PROVIDER}}},
		{"named command, job scoped to target", &vagrant.Job{Scope: &vagrant.Job_Target{Target: target},
			Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{Command: "up",
				Component: &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "up"}}}},
			[]jobqueue.Requirement{{Type: vagrant.Component_COMMAND, Name: "up"}, {Type: vagrant.Component_PROVIDER}}},
	}
	for _, c := range cases {
		if got := jobqueue.RequiredComponents(c.job); !slices.Equal(got, c.want) {
			t.Errorf("%s: RequiredComponents = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidateNewJobReportsAssignability(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	q := openReplica(t, db.URL, fastOptions()).q
	ctx := ctxT(t)
	upOnTarget := &vagrant.Job{TargetRunner: anyRunner(), Operation: &vagrant.Job_Command{Command: &vagrant.Job_CommandOp{
		Command: "up", Scope: &vagrant.Job_CommandOp_Target{Target: &sdk.Ref_Target{ResourceId: "t1"}}}}}
	check := func(name string, job *vagrant.Job, wantValid, wantAssignable bool) {
		t.Helper()
		v, err := q.Validate(ctx, job, true)
		if err != nil {
			t.Fatalf("%s: Validate: %v", name, err)
		}
		if v.Valid != wantValid || v.Assignable != wantAssignable {
			t.Fatalf("%s: Validate = %+v; want valid=%v assignable=%v", name, v, wantValid, wantAssignable)
		}
	}

	// A new job (no id) validates; nothing is registered, so nothing can take it.
	check("no runners", noopJob(anyRunner()), true, false)
	v, _ := q.Validate(ctx, futureOperationJob(t), true)
	if v.Valid || !errors.Is(v.Err, jobqueue.ErrUnknownOperation) {
		t.Fatalf("unknown operation: %+v", v)
	}
	withID := noopJob(anyRunner())
	withID.Id = "x"
	if v, _ := q.Validate(ctx, withID, true); v.Valid || invalidField(v.Err) != "job.id" {
		t.Fatalf("job with id: %+v", v)
	}

	// A by_id_only runner takes only jobs targeted at it.
	register(t, q, "local", true)
	check("by_id_only, any target", noopJob(anyRunner()), true, false)
	check("by_id_only, targeted", noopJob(runnerID("local")), true, true)
	check("targeted at an unknown runner", noopJob(runnerID("nobody")), true, false)

	// A runner with commands but no provider cannot drive a machine.
	register(t, q, "cmd-only", false, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "builtin"})
	check("noop to a runner with components", noopJob(anyRunner()), true, true)
	check("component mismatch", upOnTarget, true, false)
	if v, _ := q.Validate(ctx, upOnTarget, false); !v.Valid || v.Assignable {
		t.Fatalf("disable_assign: %+v; want valid and not checked", v)
	}

	// An offline runner does not count; a matching online one does.
	s := register(t, q, "full", false, &vagrant.Component{Type: vagrant.Component_COMMAND, Name: "builtin"},
		&vagrant.Component{Type: vagrant.Component_PROVIDER, Name: "netns"})
	check("matching runner", upOnTarget, true, true)
	if err := q.RunnerOffline(ctx, "full", s); err != nil {
		t.Fatal(err)
	}
	check("matching runner offline", upOnTarget, true, false)

	// A runner that lists no components makes no claims and takes anything.
	register(t, q, "plain", false)
	check("runner without components", upOnTarget, true, true)
}

// invalidField is the field an *input.Error names; "" for any other error.
func invalidField(err error) string {
	var ie *input.Error
	if !errors.As(err, &ie) {
		return ""
	}
	return ie.Field
}
