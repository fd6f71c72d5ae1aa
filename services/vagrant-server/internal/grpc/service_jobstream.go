package grpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// outputPage is how many stored events a job stream reads, and sends in one Terminal, at a
// time.
const outputPage = 256

type jobStream = grpc.ServerStreamingServer[vagrant.GetJobStreamResponse]

// GetJobStream follows a job, as upstream: Open at once; a State event with the full job
// (previous UNKNOWN) and one at every later change of state or cancel request; the output
// stored so far in Terminal events marked buffered, then new output as it is stored; and
// Complete (the job's error and result) last, after which the stream ends. The output is
// durable, so a finished job — also after a server restart, from any replica — still
// streams all of it. An unknown job is NotFound.
func (s *Server) GetJobStream(req *vagrant.GetJobStreamRequest, stream jobStream) error {
	ctx, cancel := s.untilStopping(stream.Context())
	defer cancel()
	if err := input.Required("job_id", req.GetJobId(), maxID); err != nil {
		return toStatus(ctx, s.log, err, "doing", "stream job")
	}
	// Watch and subscribe before reading, so nothing that happens after the reads is missed.
	watch, err := s.jobs.Watch(ctx, req.GetJobId())
	if err != nil {
		return s.toStatusOrStopped(ctx, err, "doing", "stream job", "job_id", input.Quote(req.GetJobId()))
	}
	defer watch.Close()
	sub := s.notices.Subscribe(req.GetJobId())
	defer sub.Close()
	js := &jobFollower{s: s, stream: stream, id: req.GetJobId()}
	if err := js.send(&vagrant.GetJobStreamResponse{Event: &vagrant.GetJobStreamResponse_Open_{Open: &vagrant.GetJobStreamResponse_Open{}}}); err != nil {
		return err
	}
	if done, err := js.refresh(ctx, true); done || err != nil {
		return s.streamEnd(ctx, err)
	}
	poll := time.NewTicker(s.poll)
	defer poll.Stop()
	for {
		var done bool
		select {
		case <-ctx.Done():
			return s.stopped(ctx)
		case <-watch.C():
			done, err = js.refresh(ctx, false)
		case <-sub.C():
			err = js.sendOutput(ctx, false)
		case <-poll.C:
			err = js.sendOutput(ctx, false)
		}
		if done || err != nil {
			return s.streamEnd(ctx, err)
		}
	}
}

// streamEnd is what a job or log stream returns: err, unless the stream ended because the
// server is stopping or the client left.
func (s *Server) streamEnd(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return s.stopped(ctx)
	}
	return err
}

// jobFollower is one GetJobStream's view of its job.
type jobFollower struct {
	s         *Server
	stream    jobStream
	id        string
	state     vagrant.Job_State // last State sent; UNKNOWN before the first
	canceling bool
	seq       int64 // last output event sent
}

func (f *jobFollower) send(m *vagrant.GetJobStreamResponse) error { return f.stream.Send(m) }

// toStatus maps an error of the job stream with the package's toStatus, naming the job.
func (f *jobFollower) toStatus(ctx context.Context, err error) error {
	return toStatus(ctx, f.s.log, err, "doing", "stream job", "job_id", input.Quote(f.id))
}

// refresh reads the job and sends what changed: a State event, new output (buffered on the
// first call), and Complete when the job has ended (done).
func (f *jobFollower) refresh(ctx context.Context, first bool) (done bool, err error) {
	job, err := f.s.jobs.Get(ctx, f.id)
	if errors.Is(err, jobqueue.ErrJobNotFound) && !first {
		return true, f.toStatus(ctx, fmt.Errorf("job %s was deleted (pruned) while streaming: %w", input.Quote(f.id), jobqueue.ErrJobNotFound))
	}
	if err != nil {
		return true, f.toStatus(ctx, err)
	}
	canceling := job.GetCancelTime() != nil
	if job.GetState() != f.state || canceling != f.canceling {
		if err := f.send(&vagrant.GetJobStreamResponse{Event: &vagrant.GetJobStreamResponse_State_{State: &vagrant.GetJobStreamResponse_State{
			Previous: f.state, Current: job.GetState(), Job: job, Canceling: canceling}}}); err != nil {
			return true, err
		}
		f.state, f.canceling = job.GetState(), canceling
	}
	// Read after the job: output is stored before its job ends, so a finished job's read
	// finds all of it.
	if err := f.sendOutput(ctx, first); err != nil {
		return true, err
	}
	if s := job.GetState(); s != vagrant.Job_SUCCESS && s != vagrant.Job_ERROR {
		return false, nil
	}
	return true, f.send(&vagrant.GetJobStreamResponse{Event: &vagrant.GetJobStreamResponse_Complete_{Complete: &vagrant.GetJobStreamResponse_Complete{
		Error: job.GetError(), Result: job.GetResult()}}})
}

// sendOutput sends the output stored since the last event sent.
func (f *jobFollower) sendOutput(ctx context.Context, buffered bool) error {
	for {
		entries, err := f.s.output.ReadOutput(ctx, f.id, f.seq, outputPage)
		if err != nil {
			return f.toStatus(ctx, err)
		}
		if len(entries) == 0 {
			return nil
		}
		events := make([]*joboutput.Event, len(entries))
		for i, e := range entries {
			events[i] = e.Event
		}
		if err := f.send(&vagrant.GetJobStreamResponse{Event: &vagrant.GetJobStreamResponse_Terminal_{Terminal: &vagrant.GetJobStreamResponse_Terminal{
			Events: events, Buffered: buffered}}}); err != nil {
			return err
		}
		f.seq = entries[len(entries)-1].Seq
		if len(entries) < outputPage {
			return nil
		}
	}
}
