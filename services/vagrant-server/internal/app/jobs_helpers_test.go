package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

func anyRunner() *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Any{Any: &vagrant.Ref_RunnerAny{}}}
}

func runnerRef(id string) *vagrant.Ref_Runner {
	return &vagrant.Ref_Runner{Target: &vagrant.Ref_Runner_Id{Id: &vagrant.Ref_RunnerId{Id: id}}}
}

func noopJob() *vagrant.Job {
	return &vagrant.Job{TargetRunner: anyRunner(), Operation: &vagrant.Job_Noop_{Noop: &vagrant.Job_Noop{}}}
}

// targetJob is a noop job scoped to a target.
func targetJob(t *sdk.Ref_Target) *vagrant.Job {
	j := noopJob()
	j.Scope = &vagrant.Job_Target{Target: t}
	return j
}

// queue queues job and returns its id.
func queue(t testing.TB, c vagrant.VagrantClient, ctx context.Context, job *vagrant.Job) string {
	t.Helper()
	resp, err := c.QueueJob(ctx, &vagrant.QueueJobRequest{Job: job})
	if err != nil {
		t.Fatalf("QueueJob: %v", err)
	}
	return resp.GetJobId()
}

// waitJob polls GetJob until the job is in state want.
func waitJob(t testing.TB, c vagrant.VagrantClient, ctx context.Context, id string, want vagrant.Job_State, within time.Duration) *vagrant.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		j, err := c.GetJob(ctx, &vagrant.GetJobRequest{JobId: id})
		if err != nil {
			t.Fatalf("GetJob(%s): %v", id, err)
		}
		if j.GetState() == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s after %s, want %s", id, j.GetState(), within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobStream is an open GetJobStream whose messages a goroutine collects.
type jobStream struct {
	msgs chan *vagrant.GetJobStreamResponse
	end  chan error
}

func openJobStream(t testing.TB, c vagrant.VagrantClient, ctx context.Context, id string) *jobStream {
	t.Helper()
	stream, err := c.GetJobStream(ctx, &vagrant.GetJobStreamRequest{JobId: id})
	if err != nil {
		t.Fatalf("GetJobStream(%s): %v", id, err)
	}
	js := &jobStream{msgs: make(chan *vagrant.GetJobStreamResponse, 1024), end: make(chan error, 1)}
	go func() {
		defer close(js.msgs)
		for {
			m, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				js.end <- err
				return
			}
			js.msgs <- m
		}
	}()
	return js
}

// next returns the stream's next message.
func (js *jobStream) next(t testing.TB, within time.Duration) *vagrant.GetJobStreamResponse {
	t.Helper()
	select {
	case m, ok := <-js.msgs:
		if !ok {
			t.Fatalf("job stream ended: %v", <-js.end)
		}
		return m
	case <-time.After(within):
		t.Fatalf("nothing on the job stream within %s", within)
		return nil
	}
}

// rest collects the stream's messages until it ends, which it must do OK within d.
func (js *jobStream) rest(t testing.TB, within time.Duration) []*vagrant.GetJobStreamResponse {
	t.Helper()
	var out []*vagrant.GetJobStreamResponse
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-js.msgs:
			if !ok {
				if err := <-js.end; err != nil {
					t.Fatalf("job stream ended with %v", err)
				}
				return out
			}
			out = append(out, m)
		case <-deadline:
			t.Fatalf("job stream still open after %s; got %v", within, out)
		}
	}
}

// summary renders a job stream's messages compactly: "open", "state QUEUED→RUNNING",
// "output[b] line1|line2" (b: buffered), "complete <error code>".
func summary(msgs []*vagrant.GetJobStreamResponse) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.GetOpen() != nil:
			out = append(out, "open")
		case m.GetState() != nil:
			s := m.GetState()
			cancel := ""
			if s.GetCanceling() {
				cancel = " canceling"
			}
			out = append(out, fmt.Sprintf("state %s→%s%s", s.GetPrevious(), s.GetCurrent(), cancel))
		case m.GetTerminal() != nil:
			text := ""
			for i, ev := range m.GetTerminal().GetEvents() {
				if i > 0 {
					text += "|"
				}
				text += ev.GetLine().GetMsg()
			}
			b := ""
			if m.GetTerminal().GetBuffered() {
				b = "[b]"
			}
			out = append(out, "output"+b+" "+text)
		case m.GetComplete() != nil:
			out = append(out, fmt.Sprintf("complete %d", m.GetComplete().GetError().GetCode()))
		default:
			out = append(out, fmt.Sprintf("%v", m))
		}
	}
	return out
}
