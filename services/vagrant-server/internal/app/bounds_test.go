package app_test

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// TestJobListsAreBounded queues jobs each with one list or map one entry over its bound
// (libs/platform/input/bounds): each is refused with InvalidArgument naming the field, and no
// job is stored. A job at every bound is queued.
func TestJobListsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	ctx := call(t, e.bootstrap(t, c))

	max := func(field string) int { return bounds.Fields[protoreflect.FullName(field)].Max }
	labels := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m["k"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	commandJob := func(op *vagrant.Job_CommandOp) *vagrant.Job {
		j := noopJob()
		j.Operation = &vagrant.Job_Command{Command: op}
		op.Command = "status"
		return j
	}
	args := func(n int) *sdk.Command_Arguments {
		a := &sdk.Command_Arguments{}
		for range n {
			a.Args = append(a.Args, "--verbose")
		}
		return a
	}
	over := []struct {
		field string
		job   *vagrant.Job
	}{
		{"job.labels", func() *vagrant.Job {
			j := noopJob()
			j.Labels = labels(max("hashicorp.vagrant.Job.labels") + 1)
			return j
		}()},
		{"job.data_source_overrides", func() *vagrant.Job {
			j := noopJob()
			j.DataSourceOverrides = labels(max("hashicorp.vagrant.Job.data_source_overrides") + 1)
			return j
		}()},
		{"job.command.labels", commandJob(&vagrant.Job_CommandOp{Labels: labels(max("hashicorp.vagrant.Job.CommandOp.labels") + 1)})},
		{"job.command.cli_args.args", commandJob(&vagrant.Job_CommandOp{CliArgs: args(max("hashicorp.vagrant.sdk.Command.Arguments.args") + 1)})},
	}
	for _, tc := range over {
		_, err := c.QueueJob(ctx, &vagrant.QueueJobRequest{Job: tc.job})
		if s := status.Convert(err); s.Code() != codes.InvalidArgument || !strings.HasPrefix(s.Message(), tc.field+": has ") {
			t.Errorf("%s over its bound: %v %q; want InvalidArgument naming %s", tc.field, s.Code(), s.Message(), tc.field)
		}
	}
	resp, err := c.XListJobs(ctx, &vagrant.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetJobs()); n != 0 {
		t.Fatalf("%d jobs were stored from refused requests", n)
	}

	atBounds := commandJob(&vagrant.Job_CommandOp{
		Labels:  labels(max("hashicorp.vagrant.Job.CommandOp.labels")),
		CliArgs: args(max("hashicorp.vagrant.sdk.Command.Arguments.args")),
	})
	atBounds.Labels = labels(max("hashicorp.vagrant.Job.labels"))
	queue(t, c, ctx, atBounds)
}
