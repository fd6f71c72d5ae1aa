package grpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

type runnerJobStream = grpc.BidiStreamingServer[vagrant.RunnerJobStreamRequest, vagrant.RunnerJobStreamResponse]

// RunnerJobStream hands one job to a runner and follows it to the end, as upstream's
// protocol goes: Request{runner_id} → (blocks until a job fits) Assignment{job} → the
// runner's Ack (the job runs) or Error (the job goes back to the queue) → Terminal output,
// Heartbeats → Complete{result} or Error{status}; the stream then ends and the runner opens
// a new one for its next job. A cancel of the job reaches the runner as JobCancel{force}
// from whichever replica served CancelJob; a forced cancel (the job already ended: its
// heartbeat timed out, or it expired unacknowledged) ends the stream.
//
// A runner that goes away before acknowledging gives its job back at once (nack). After the
// ack the job is the runner's: should the stream break, the job ends when its heartbeat
// deadline passes, since the protocol has no way to resume it on a new stream.
func (s *Server) RunnerJobStream(stream runnerJobStream) error {
	ctx, cancel := s.untilStopping(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return recvStatus(err)
	}
	req := first.GetRequest()
	if req == nil {
		return toStatus(ctx, s.log, streamErrorf("the first message of RunnerJobStream must be request, got %s", eventName(first)), "doing", "take a job")
	}
	if err := input.Required("request.runner_id", req.GetRunnerId(), maxID); err != nil {
		return toStatus(ctx, s.log, err, "doing", "take a job")
	}
	// Only the runner id's registrant takes its jobs (a job for kaas's reserved runner holds
	// a cluster's bootstrap).
	registrant, err := registrantOf(ctx)
	if err == nil {
		err = s.jobs.CheckRegistrant(ctx, req.GetRunnerId(), registrant)
	}
	if err != nil {
		return toStatus(ctx, s.log, err, "doing", "take a job", "runner_id", input.Quote(req.GetRunnerId()))
	}
	job, err := s.jobs.Assign(ctx, req.GetRunnerId())
	if err != nil {
		if ctx.Err() != nil {
			return s.stopped(ctx)
		}
		return toStatus(ctx, s.log, err, "doing", "take a job", "runner_id", input.Quote(req.GetRunnerId()))
	}
	rj := &runnerJob{s: s, stream: stream, runner: req.GetRunnerId(), job: job,
		log: s.log.With("runner_id", input.Quote(req.GetRunnerId()), "job_id", job.GetId())}
	return rj.run(ctx)
}

// runnerJob is one job's life on a runner's stream.
type runnerJob struct {
	s      *Server
	stream runnerJobStream
	runner string
	job    *vagrant.Job
	log    *slog.Logger

	msgs        chan received
	cancelSent  bool // a JobCancel went out
	forceSent   bool // a JobCancel{force} went out
	nackOnError bool // the job is still only assigned: give it back if the stream ends
}

// received is one message (or the receive error that ended the stream) from the runner.
type received struct {
	req *vagrant.RunnerJobStreamRequest
	err error
	// ack is the GetJob announcement of an ack: whoever takes the message finishes it.
	ack *pendingAck
}

// run assigns, waits for the ack and, once acknowledged, follows the running job.
func (rj *runnerJob) run(ctx context.Context) error {
	rj.nackOnError = true
	defer rj.nackIfHeld(ctx)
	if ctx.Err() != nil {
		// The stream ended while the job was being claimed — its token was revoked, or the
		// server is stopping: the job goes back unseen rather than to a caller who may no
		// longer have it.
		return rj.s.stopped(ctx)
	}
	// The job was just assigned: its state is known, so the watch needs no read. A cancel
	// committed before it started is in the state Ack returns.
	watch := rj.s.jobs.WatchHeld(rj.job.GetId())
	defer watch.Close()
	if err := rj.stream.Send(&vagrant.RunnerJobStreamResponse{Event: &vagrant.RunnerJobStreamResponse_Assignment{
		Assignment: &vagrant.RunnerJobStreamResponse_JobAssignment{Job: rj.job}}}); err != nil {
		return err
	}
	rj.log.DebugContext(ctx, "job assigned")
	rj.msgs = make(chan received)
	go rj.receive()
	for {
		select {
		case <-ctx.Done():
			return rj.s.stopped(ctx)
		case m := <-rj.msgs:
			if m.err != nil {
				return recvStatus(m.err)
			}
			switch m.req.GetEvent().(type) {
			case *vagrant.RunnerJobStreamRequest_Ack_:
				acked, err := rj.s.jobs.Ack(ctx, rj.job.GetId(), rj.runner)
				rj.s.acks.finish(rj.job.GetId(), m.ack, acked)
				if err != nil {
					// Refused: the job is not ours any more (it expired or was reassigned),
					// so there is nothing to give back.
					rj.nackOnError = !errors.Is(err, jobqueue.ErrWrongState)
					return rj.toStatusOrStopped(ctx, err, "acknowledge job")
				}
				rj.nackOnError = false
				rj.log.DebugContext(ctx, "job acknowledged")
				if acked.GetCancelTime() != nil {
					if err := rj.sendCancel(ctx, false); err != nil {
						return err
					}
				}
				// From here the job runs whatever the server's lifetime: a shutdown waits
				// (up to its timeout) for the runner to finish rather than cutting it off.
				return rj.running(rj.stream.Context(), watch)
			case *vagrant.RunnerJobStreamRequest_Error_:
				rj.log.InfoContext(ctx, "runner refused the job; it goes back to the queue",
					"error", m.req.GetError().GetError().GetMessage())
				return nil // the deferred nack requeues it
			default:
				return rj.toStatus(ctx, streamErrorf("expected ack or error after the assignment, got %s", eventName(m.req)), "assign job")
			}
		case c := <-watch.C():
			if done, err := rj.onChange(ctx, c); done {
				return err
			}
		}
	}
}

// receive forwards the runner's messages until the stream ends. An ack is announced to
// GetJob (pendingAcks) the moment it arrives, before the job's stream goroutine commits it.
func (rj *runnerJob) receive() {
	for {
		req, err := rj.stream.Recv()
		m := received{req: req, err: err}
		if req.GetAck() != nil {
			m.ack = rj.s.acks.start(rj.job.GetId())
		}
		select {
		case rj.msgs <- m:
		case <-rj.stream.Context().Done():
			rj.s.acks.drop(rj.job.GetId(), m.ack)
			return
		}
		if err != nil {
			return
		}
	}
}

// nackIfHeld gives an unacknowledged assignment back to the queue (or ends it, if it was
// canceled or expired meanwhile) when the stream ends before the ack.
func (rj *runnerJob) nackIfHeld(ctx context.Context) {
	if !rj.nackOnError {
		return
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := rj.s.jobs.Nack(nctx, rj.job.GetId(), rj.runner); err != nil {
		rj.log.WarnContext(ctx, "could not give the unacknowledged job back; its ack deadline will", "error", err)
	}
}

// onChange reacts to a change of the job made anywhere. The change is only a hint —
// notifications can arrive late and out of order, so a stale "QUEUED" may follow the
// assignment — and the job is read afresh: a cancel request reaches the runner as
// JobCancel{force: false}; a job that ended while the runner holds it (a forced cancel, its
// heartbeat timed out, it expired unacknowledged) as JobCancel{force: true}, as upstream
// decides force, and the stream ends. A job that went back to the queue or to another
// runner (its assignment timed out) ends the stream with FailedPrecondition.
//
// Notifications arrive in commit order; only those older than the watch's first read can be
// stale. So a hint that the job is still this runner's and not canceled needs no read: any
// later change brings its own hint.
func (rj *runnerJob) onChange(ctx context.Context, hint jobqueue.Change) (done bool, err error) {
	if held := hint.State == vagrant.Job_WAITING || hint.State == vagrant.Job_RUNNING; held && hint.AssignedTo(rj.runner) && !hint.CancelRequested {
		return false, nil
	}
	job, err := rj.s.jobs.Get(ctx, rj.job.GetId())
	if err != nil {
		return true, rj.toStatusOrStopped(ctx, err, "follow job")
	}
	ended := job.GetState() == vagrant.Job_SUCCESS || job.GetState() == vagrant.Job_ERROR
	switch {
	case ended && !rj.forceSent:
		err = rj.sendCancel(ctx, true)
	case job.GetCancelTime() != nil && !rj.cancelSent:
		err = rj.sendCancel(ctx, false)
	}
	switch {
	case ended:
		rj.nackOnError = false
		return true, err
	case err != nil:
		return true, err
	case job.GetState() == vagrant.Job_QUEUED || job.GetAssignedRunner().GetId() != rj.runner:
		rj.nackOnError = false
		return true, rj.toStatus(ctx, streamErrorf("job %s is no longer this runner's to run (not acknowledged in time)", rj.job.GetId()), "follow job")
	}
	return false, nil
}

// sendCancel tells the runner to stop the job.
func (rj *runnerJob) sendCancel(ctx context.Context, force bool) error {
	if err := rj.stream.Send(&vagrant.RunnerJobStreamResponse{Event: &vagrant.RunnerJobStreamResponse_Cancel{
		Cancel: &vagrant.RunnerJobStreamResponse_JobCancel{Force: force}}}); err != nil {
		return err
	}
	rj.cancelSent, rj.forceSent = true, force
	rj.log.InfoContext(ctx, "cancel sent to the runner", "force", force)
	return nil
}

// toStatusOrStopped maps err with toStatus (attrs say what the handler was doing), unless
// the stream ended because the server is stopping or the client left.
func (s *Server) toStatusOrStopped(ctx context.Context, err error, attrs ...any) error {
	if ctx.Err() != nil {
		return s.stopped(ctx)
	}
	return toStatus(ctx, s.log, err, attrs...)
}

// toStatus maps an error of the job's stream with the package's toStatus, naming what the
// stream was doing, the job and the runner in the log.
func (rj *runnerJob) toStatus(ctx context.Context, err error, doing string) error {
	return toStatus(ctx, rj.s.log, err, rj.attrs(doing)...)
}

// toStatusOrStopped is toStatus unless the stream ended (Server.toStatusOrStopped).
func (rj *runnerJob) toStatusOrStopped(ctx context.Context, err error, doing string) error {
	return rj.s.toStatusOrStopped(ctx, err, rj.attrs(doing)...)
}

// attrs say, for the log, what the job's stream was doing, for which job and runner.
func (rj *runnerJob) attrs(doing string) []any {
	return []any{"doing", doing, "job_id", rj.job.GetId(), "runner_id", input.Quote(rj.runner)}
}

// eventName names the event a stream message carries (its "event" oneof), for errors.
func eventName(m proto.Message) string {
	r := m.ProtoReflect()
	if od := r.Descriptor().Oneofs().ByName("event"); od != nil {
		if fd := r.WhichOneof(od); fd != nil {
			return string(fd.Name())
		}
	}
	return "no event"
}
