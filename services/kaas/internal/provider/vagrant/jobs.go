package vagrant

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// maxOutput bounds the job output kept from one job (the tail is what explains a failure).
const maxOutput = 64 << 10

// result is what following a job learned.
type result struct {
	Done bool // the job completed (else the wait ended first)
	OK   bool // it ran and its command exited 0
	// Failure says why it did not succeed, in one line.
	Failure string
	// Output is the command's output (the last maxOutput bytes).
	Output string
	// State is the job's last known state while it is not done.
	State vagrant.Job_State
}

// follow reads job id's GetJobStream until the job completes or wait passes.
func (c *Client) follow(ctx context.Context, id string, wait time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	slack := min(maxDeadlineSlack, wait/4)
	cctx, err := c.ctx(ctx)
	if err != nil {
		return result{}, err
	}
	stream, err := c.api.GetJobStream(cctx, &vagrant.GetJobStreamRequest{JobId: id})
	if err != nil {
		return result{}, notDone(ctx, slack, err)
	}
	var out tail
	var r result
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return r, fmt.Errorf("job %s: the stream ended without completion", id)
			}
			r.Output = out.String()
			return r, notDone(ctx, slack, err) // nil: waited long enough; follow again later
		}
		switch e := ev.GetEvent().(type) {
		case *vagrant.GetJobStreamResponse_State_:
			r.State = e.State.GetCurrent()
		case *vagrant.GetJobStreamResponse_Terminal_:
			for _, te := range e.Terminal.GetEvents() {
				switch {
				case te.GetRaw() != nil:
					out.Write(te.GetRaw().GetData())
				case te.GetLine() != nil:
					out.Write([]byte(te.GetLine().GetMsg() + "\n"))
				}
			}
		case *vagrant.GetJobStreamResponse_Error_:
			return r, fmt.Errorf("job %s: %s", id, e.Error.GetError().GetMessage())
		case *vagrant.GetJobStreamResponse_Complete_:
			r.Done, r.Output = true, out.String()
			r.OK, r.Failure = outcome(e.Complete)
			return r, nil
		}
	}
}

// maxDeadlineSlack bounds how close to the follow's deadline an end of the stream by that
// deadline counts as the wait running out.
const maxDeadlineSlack = time.Second

// notDone tells a wait that ran out (nil: not an error, follow again later) from a failed
// call. The follow's deadline travels to vagrant-server, which ends the stream with
// DeadlineExceeded (or resets it, which grpc-go reports as DeadlineExceeded or Canceled)
// when it passes; that answer can arrive before this process's own timer has cancelled ctx,
// the more so on a loaded machine. So such an end at most slack before the deadline is the
// wait running out too; any other error, or one well before the deadline, is a failure.
func notDone(ctx context.Context, slack time.Duration, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.Canceled:
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= slack {
			return nil
		}
	}
	return err
}

// outcome reads a completed job: it succeeded when it has no error and its command ran and
// exited 0.
func outcome(c *vagrant.GetJobStreamResponse_Complete) (bool, string) {
	if e := c.GetError(); e != nil {
		return false, "the job failed: " + input.Truncate(e.GetMessage(), 300)
	}
	run := c.GetResult().GetRun()
	if run == nil {
		return true, ""
	}
	if run.GetRunResult() {
		return true, ""
	}
	msg := fmt.Sprintf("the command exited with status %d", run.GetExitCode())
	if e := run.GetRunError(); e != nil && e.GetMessage() != "" {
		msg = input.Truncate(e.GetMessage(), 300)
	}
	return false, msg
}

// tail keeps the last maxOutput bytes written.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > maxOutput {
		t.b = t.b[len(t.b)-maxOutput:]
	}
}

func (t *tail) String() string { return string(t.b) }

// lastLines returns the last n non-empty lines of out, for messages.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return input.Truncate(strings.Join(lines, " | "), 400)
}
