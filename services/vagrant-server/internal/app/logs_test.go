package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// logLine is one line of a log stream with the job (deployment) and runner (instance) it
// came from.
type logLine struct{ job, runner, text string }

// logStream collects the lines of a GetLogStream.
type logStream struct {
	lines chan logLine
	end   chan error
}

func openLogStream(t *testing.T, c vagrant.VagrantClient, token string, req *vagrant.GetLogStreamRequest) *logStream {
	t.Helper()
	ctx, cancel := context.WithCancel(callCtx(token))
	t.Cleanup(cancel)
	stream, err := c.GetLogStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return collectLog(stream)
}

func collectLog(stream grpc.ServerStreamingClient[vagrant.LogBatch]) *logStream {
	ls := &logStream{lines: make(chan logLine, 1024), end: make(chan error, 1)}
	go func() {
		for {
			b, err := stream.Recv()
			if err != nil {
				ls.end <- err
				close(ls.lines)
				return
			}
			for _, l := range b.GetLines() {
				ls.lines <- logLine{b.GetDeploymentId(), b.GetInstanceId(), l.GetLine()}
			}
		}
	}()
	return ls
}

// take waits for n lines.
func (ls *logStream) take(t *testing.T, n int) []logLine {
	t.Helper()
	var out []logLine
	for len(out) < n {
		select {
		case l, ok := <-ls.lines:
			if !ok {
				t.Fatalf("log stream ended after %v: %v", out, <-ls.end)
			}
			out = append(out, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("log stream: %d lines, want %d: %v", len(out), n, out)
		}
	}
	return out
}

// quiet checks that no line arrives for a moment.
func (ls *logStream) quiet(t *testing.T) {
	t.Helper()
	select {
	case l := <-ls.lines:
		t.Fatalf("unexpected log line %v", l)
	case <-time.After(300 * time.Millisecond):
	}
}

func texts(ls []logLine) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

// GetLogStream serves the output of the jobs in a basis, project or target: a backlog of
// limit_backlog lines, then new lines as runners write them.
func TestGetLogStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.start(t)
	tok := e.bootstrap(t, c)
	ctx := call(t, tok)
	web, api, vm := registryFixture(t, c, ctx)
	r := startRunner(t, c, tok, "runner-1", false)
	runWith := func(job *vagrant.Job, lines ...string) string {
		t.Helper()
		id := queue(t, c, ctx, job)
		s := r.take(t, 10*time.Second)
		s.ack()
		s.output(lines...)
		s.complete(nil)
		return id
	}
	projectJob := func(p *sdk.Ref_Project) *vagrant.Job {
		j := noopJob()
		j.Scope = &vagrant.Job_Project{Project: p}
		return j
	}
	onVM := runWith(targetJob(vm), "vm 1", "vm 2")
	runWith(projectJob(web), "web 1")
	var many []string
	for i := range 60 {
		many = append(many, fmt.Sprintf("api %d", i))
	}
	runWith(projectJob(api), many...)
	runWith(noopJob(), "in no scope")

	dev := &sdk.Ref_Basis{Name: "dev"}
	cases := []struct {
		name string
		req  *vagrant.GetLogStreamRequest
		want []string
	}{
		{"project, default backlog", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Project{Project: web}}, []string{"vm 1", "vm 2", "web 1"}},
		{"target, backlog 1", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}, LimitBacklog: 1}, []string{"vm 2"}},
		{"basis, default backlog of 50", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Basis{Basis: dev}}, many[10:]},
		{"basis, whole backlog", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Basis{Basis: dev}, LimitBacklog: -1},
			append([]string{"vm 1", "vm 2", "web 1"}, many...)},
	}
	for _, tc := range cases {
		ls := openLogStream(t, c, tok, tc.req)
		got := ls.take(t, len(tc.want))
		if !slices.Equal(texts(got), tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, texts(got), tc.want)
		}
		ls.quiet(t)
	}
	ls := openLogStream(t, c, tok, &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}, LimitBacklog: 2})
	if got := ls.take(t, 2); got[0] != (logLine{onVM, "runner-1", "vm 1"}) {
		t.Fatalf("backlog line %v: want job %s on runner-1", got[0], onVM)
	}
	// Live: lines of the scope arrive as runners write them, others do not.
	runWith(projectJob(api), "elsewhere")
	live := runWith(targetJob(vm), "live 1", "live 2")
	if got := ls.take(t, 2); !slices.Equal(got, []logLine{{live, "runner-1", "live 1"}, {live, "runner-1", "live 2"}}) {
		t.Fatalf("live lines: %v", got)
	}
	ls.quiet(t)

	bad := []struct {
		name string
		req  *vagrant.GetLogStreamRequest
		code codes.Code
	}{
		{"no scope", &vagrant.GetLogStreamRequest{}, codes.InvalidArgument},
		{"unknown project", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Project{Project: &sdk.Ref_Project{Name: "nope", Basis: dev}}}, codes.NotFound},
		{"unknown target", &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: &sdk.Ref_Target{ResourceId: "01J00000000000000000000000"}}}, codes.NotFound},
	}
	for _, b := range bad {
		stream, err := c.GetLogStream(ctx, b.req)
		if err == nil {
			_, err = stream.Recv()
		}
		code(t, b.name, err, b.code)
	}
}
