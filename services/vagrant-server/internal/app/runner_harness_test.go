package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// testRunner is a Vagrant runner written against the generated client: it registers through
// RunnerConfig and takes jobs through RunnerJobStream message for message as vagrant-runner
// (and upstream's runner) does, with the test deciding every step.
type testRunner struct {
	c     vagrant.VagrantClient
	token string
	id    string
	stop  context.CancelFunc
	ended chan error // the RunnerConfig stream's end
}

// startRunner registers runner id on c and keeps its RunnerConfig stream open until stop
// (or the test's end). It returns once the server sent the runner its configuration.
func startRunner(t testing.TB, c vagrant.VagrantClient, token, id string, byIDOnly bool, components ...*vagrant.Component) *testRunner {
	t.Helper()
	ctx, cancel := context.WithCancel(callCtx(token))
	stream, err := c.RunnerConfig(ctx)
	if err == nil {
		err = stream.Send(&vagrant.RunnerConfigRequest{Event: &vagrant.RunnerConfigRequest_Open_{Open: &vagrant.RunnerConfigRequest_Open{
			Runner: &vagrant.Runner{Id: id, ByIdOnly: byIDOnly, Components: components}}}})
	}
	var resp *vagrant.RunnerConfigResponse
	if err == nil {
		resp, err = stream.Recv()
	}
	if err != nil || resp.GetConfig() == nil {
		cancel()
		t.Fatalf("runner %s: register: %v (config %v)", id, err, resp)
	}
	r := &testRunner{c: c, token: token, id: id, stop: cancel, ended: make(chan error, 1)}
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				r.ended <- err
				return
			}
		}
	}()
	t.Cleanup(cancel)
	return r
}

// callCtx is call without a deadline (streams live as long as their test wants) and
// without a testing.T, for goroutines.
func callCtx(token string) context.Context {
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(context.Background(), md)
}

// session is one RunnerJobStream of a runner.
type session struct {
	t      testing.TB
	r      *testRunner
	stream grpc.BidiStreamingClient[vagrant.RunnerJobStreamRequest, vagrant.RunnerJobStreamResponse]
	cancel context.CancelFunc
	msgs   chan *vagrant.RunnerJobStreamResponse
	end    chan error // the stream's final status: nil for OK
	job    *vagrant.Job
}

// request opens a job stream and asks for work; the assignment is not awaited.
func (r *testRunner) request(t testing.TB) *session {
	t.Helper()
	ctx, cancel := context.WithCancel(callCtx(r.token))
	stream, err := r.c.RunnerJobStream(ctx)
	if err == nil {
		err = stream.Send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{
			Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: r.id}}})
	}
	if err != nil {
		cancel()
		t.Fatalf("runner %s: open job stream: %v", r.id, err)
	}
	s := &session{t: t, r: r, stream: stream, cancel: cancel, msgs: make(chan *vagrant.RunnerJobStreamResponse, 16), end: make(chan error, 1)}
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				s.end <- err
				close(s.msgs)
				return
			}
			s.msgs <- m
		}
	}()
	t.Cleanup(cancel)
	return s
}

// take asks for work and waits for the assignment.
func (r *testRunner) take(t testing.TB, within time.Duration) *session {
	t.Helper()
	s := r.request(t)
	s.assignment(within)
	return s
}

// assignment waits for the job assignment.
func (s *session) assignment(within time.Duration) *vagrant.Job {
	s.t.Helper()
	m := s.next(within)
	if m.GetAssignment() == nil {
		s.t.Fatalf("runner %s: got %v, want an assignment", s.r.id, m)
	}
	s.job = m.GetAssignment().GetJob()
	return s.job
}

// next waits for the server's next message.
func (s *session) next(within time.Duration) *vagrant.RunnerJobStreamResponse {
	s.t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			s.t.Fatalf("runner %s: stream ended: %v", s.r.id, <-s.end)
		}
		return m
	case <-time.After(within):
		s.t.Fatalf("runner %s: nothing from the server within %s", s.r.id, within)
		return nil
	}
}

// expectCancel waits for JobCancel and returns its force flag.
func (s *session) expectCancel(within time.Duration) bool {
	s.t.Helper()
	m := s.next(within)
	if m.GetCancel() == nil {
		s.t.Fatalf("runner %s: got %v, want a JobCancel", s.r.id, m)
	}
	return m.GetCancel().GetForce()
}

func (s *session) send(req *vagrant.RunnerJobStreamRequest) {
	s.t.Helper()
	if err := s.stream.Send(req); err != nil {
		s.t.Fatalf("runner %s: send %T: %v", s.r.id, req.GetEvent(), err)
	}
}

func (s *session) ack() {
	s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Ack_{Ack: &vagrant.RunnerJobStreamRequest_Ack{}}})
}

func (s *session) heartbeat() {
	s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Heartbeat_{Heartbeat: &vagrant.RunnerJobStreamRequest_Heartbeat{}}})
}

// output sends lines as one Terminal message.
func (s *session) output(lines ...string) {
	events := make([]*vagrant.GetJobStreamResponse_Terminal_Event, len(lines))
	for i, l := range lines {
		events[i] = lineEvent(l)
	}
	s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Terminal{
		Terminal: &vagrant.GetJobStreamResponse_Terminal{Events: events}}})
}

func lineEvent(msg string) *vagrant.GetJobStreamResponse_Terminal_Event {
	return &vagrant.GetJobStreamResponse_Terminal_Event{Timestamp: timestamppb.Now(),
		Event: &vagrant.GetJobStreamResponse_Terminal_Event_Line_{Line: &vagrant.GetJobStreamResponse_Terminal_Event_Line{Msg: msg}}}
}

// complete reports success and waits for the server to end the stream (OK).
func (s *session) complete(result *vagrant.Job_Result) {
	s.t.Helper()
	s.sendComplete(result)
	s.wantEnd(nil)
}

func (s *session) sendComplete(result *vagrant.Job_Result) {
	s.t.Helper()
	s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Complete_{Complete: &vagrant.RunnerJobStreamRequest_Complete{Result: result}}})
}

// fail reports an error; the stream ends.
func (s *session) fail(st *spb.Status) {
	s.t.Helper()
	s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Error_{Error: &vagrant.RunnerJobStreamRequest_Error{Error: st}}})
}

// wantEnd waits for the server to end the stream with err's status (nil: OK).
func (s *session) wantEnd(want error) {
	s.t.Helper()
	select {
	case err := <-s.end:
		if (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
			s.t.Fatalf("runner %s: stream ended with %v, want %v", s.r.id, err, want)
		}
		s.end <- err // others may wait too
	case <-time.After(10 * time.Second):
		s.t.Fatalf("runner %s: stream did not end", s.r.id)
	}
}

// wantEndCode waits for the stream to end with code, its message containing each of msg.
func (s *session) wantEndCode(want codes.Code, msg ...string) {
	s.t.Helper()
	select {
	case err := <-s.end:
		s.end <- err
		code(s.t, "runner "+s.r.id+" stream end", err, want, msg...)
	case <-time.After(10 * time.Second):
		s.t.Fatalf("runner %s: stream did not end", s.r.id)
	}
}

// run takes one job and runs it to success with one line of output naming the job.
func (r *testRunner) run(t testing.TB, within time.Duration) *vagrant.Job {
	t.Helper()
	s := r.take(t, within)
	s.ack()
	s.output("ran " + s.job.GetId() + " on " + r.id)
	s.complete(nil)
	return s.job
}

// work runs jobs on r until ctx ends, as a runner's main loop does: a new job stream per
// job, ack, one line of output, complete. done is called with each job run and when its
// assignment arrived. It returns the first error other than ctx ending.
func (r *testRunner) work(ctx context.Context, done func(job *vagrant.Job, assigned time.Time)) error {
	md, _ := metadata.FromOutgoingContext(callCtx(r.token))
	ctx = metadata.NewOutgoingContext(ctx, md)
	for ctx.Err() == nil {
		job, assigned, err := r.runOnce(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("runner %s: %w", r.id, err)
		}
		done(job, assigned)
	}
	return nil
}

// runOnce is one iteration of work.
func (r *testRunner) runOnce(ctx context.Context) (*vagrant.Job, time.Time, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.c.RunnerJobStream(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	send := func(req *vagrant.RunnerJobStreamRequest) {
		if err == nil {
			err = stream.Send(req)
		}
	}
	send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: r.id}}})
	var m *vagrant.RunnerJobStreamResponse
	if err == nil {
		m, err = stream.Recv()
	}
	assigned := time.Now()
	if err != nil {
		return nil, assigned, err
	}
	job := m.GetAssignment().GetJob()
	if job == nil {
		return nil, assigned, fmt.Errorf("got %v, want an assignment", m)
	}
	send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Ack_{Ack: &vagrant.RunnerJobStreamRequest_Ack{}}})
	send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Terminal{Terminal: &vagrant.GetJobStreamResponse_Terminal{
		Events: []*vagrant.GetJobStreamResponse_Terminal_Event{lineEvent("ran on " + r.id)}}}})
	send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Complete_{Complete: &vagrant.RunnerJobStreamRequest_Complete{}}})
	if err == nil {
		err = stream.CloseSend()
	}
	if err == nil || errors.Is(err, io.EOF) {
		// The server ends the stream once the job is recorded; a Send that met the end
		// (io.EOF) says nothing about how it ended: Recv has the status.
		_, err = stream.Recv()
	}
	if !errors.Is(err, io.EOF) {
		return nil, assigned, fmt.Errorf("job %s: stream ended with %v, want OK", job.GetId(), err)
	}
	return job, assigned, nil
}
