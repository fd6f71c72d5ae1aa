package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/runner/operation"
)

// closeTimeout bounds the wait for the server to end the stream after the job's last event.
const closeTimeout = 10 * time.Second

// Why a job's context ended (its cancel cause), besides provider.ErrKilled for a forced cancel.
var (
	errCanceled   = errors.New("job canceled")
	errShutdown   = errors.New("vagrant-runner is shutting down")
	errStreamLost = errors.New("job stream to vagrant-server lost")
)

// takeJob opens a RunnerJobStream, asks for a job, and runs the one the server assigns. It
// returns nil once a job was run and reported (or when shutdown interrupted the wait), and an
// error when the stream failed.
func (r *Runner) takeJob(ctx context.Context) error {
	streamCtx, cancelStream := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelStream(nil)
	// While waiting for an assignment, shutdown closes the stream; once a job is assigned, it
	// no longer does (the job gets its grace period).
	stopWaiting := context.AfterFunc(ctx, func() { cancelStream(errShutdown) })
	defer stopWaiting()
	stream, err := r.o.Client.RunnerJobStream(streamCtx)
	if err != nil {
		return err
	}
	if err := stream.Send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Request_{
		Request: &vagrant.RunnerJobStreamRequest_Request{RunnerId: r.o.ID},
	}}); err != nil {
		_, recvErr := stream.Recv()
		return errors.Join(err, recvErr)
	}
	resp, err := stream.Recv()
	if !stopWaiting() {
		return nil // shutdown: an assignment that raced in returns to the queue at its ack timeout
	}
	if err != nil {
		return err
	}
	job := resp.GetAssignment().GetJob()
	if job == nil {
		return fmt.Errorf("protocol error: expected a job assignment, got %T", resp.GetEvent())
	}
	return r.runJob(ctx, stream, job)
}

// runJob acknowledges job, waits until the server has recorded the acknowledgement, executes
// the job with heartbeats and output, obeys cancels, and reports Complete or Error.
func (r *Runner) runJob(ctx context.Context, stream jobStream, job *vagrant.Job) error {
	log := r.log.With("job_id", job.GetId(), "operation", operation.Name(job))
	s := &sender{stream: stream}
	if err := s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Ack_{Ack: &vagrant.RunnerJobStreamRequest_Ack{}}}); err != nil {
		return fmt.Errorf("ack job %s: %w", job.GetId(), err)
	}
	jobCtx, cancelJob := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJob(nil)
	watched := make(chan error, 1)
	go func() { watched <- r.watchStream(stream, cancelJob, log) }()

	// Never run a job twice: not one this runner started before, nor one another of its slots
	// is taking (the server assigned it again: each slot's stream carries the same runner id),
	// nor — when it changes anything — one whose acknowledgement the server has not recorded
	// (it could assign the job again). A read-only operation starts at once: running it twice
	// changes nothing.
	var result *vagrant.Job_Result
	var err error
	switch herr := r.o.Journal.Hold(job.GetId()); {
	case errors.Is(herr, errAlreadyRan):
		err = status.Errorf(codes.FailedPrecondition, "vagrant-runner %s already ran job %s: a job runs at most once on a runner; queue a new job to run it again", r.o.ID, job.GetId())
		log.WarnContext(ctx, "refusing a job this runner already ran")
	case errors.Is(herr, errHeld):
		// The other slot's stream carries the job (its heartbeats and end count for this
		// runner id); this duplicate stream is dropped without a word.
		log.WarnContext(ctx, "job not started: another slot of this runner is taking it")
		_ = stream.CloseSend()
		return nil
	default:
		defer r.o.Journal.Release(job.GetId())
		if !operation.ReadOnly(job) {
			err = r.awaitAck(jobCtx, job.GetId())
		}
	}
	if err == nil {
		if jerr := r.o.Journal.Record(job.GetId()); jerr != nil {
			log.WarnContext(ctx, "job journal not written; the job runs anyway", "error", jerr)
		}
	}
	cause := context.Cause(jobCtx)
	if errors.Is(cause, errStreamLost) || errors.Is(err, errNotOurs) {
		log.WarnContext(ctx, "job not started: the server did not record it as ours", "error", errors.Join(err, cause))
		_ = stream.CloseSend()
		return nil
	}

	started := time.Now()
	if err == nil {
		r.jobStarted(job)
		log.DebugContext(ctx, "job started")
		jobDone := make(chan struct{})
		go r.abortOnShutdown(ctx, jobDone, cancelJob, log)
		heartbeatDone := r.heartbeat(jobCtx, s)
		term := newTerminal(s.send)
		env := jobEnv(r.o.BaseEnv, r.state.configVars(), r.o.ID, job)
		result, err = r.o.Executor.Execute(jobCtx, job, env, term)
		term.close()
		heartbeatDone()
		close(jobDone)
		cause = context.Cause(jobCtx)
		if errors.Is(cause, errStreamLost) {
			r.jobEnded(job, "lost", started)
			log.WarnContext(ctx, "job stream lost while the job ran; the server fails the job at its heartbeat timeout", "error", <-watched)
			return errStreamLost
		}
	} else {
		r.jobStarted(job)
	}
	final := &vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Complete_{
		Complete: &vagrant.RunnerJobStreamRequest_Complete{Result: result}}}
	outcome := "success"
	if err != nil {
		st := jobStatus(err, cause)
		outcome = outcomeOf(cause)
		final = &vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Error_{
			Error: &vagrant.RunnerJobStreamRequest_Error{Error: st}}}
		log.InfoContext(ctx, "job failed", "code", codes.Code(st.GetCode()).String(), "message", st.GetMessage())
	}
	sendErr := s.send(final)
	_ = stream.CloseSend()
	r.jobEnded(job, outcome, started)
	if sendErr != nil {
		return fmt.Errorf("report the end of job %s: %w", job.GetId(), sendErr)
	}
	select {
	case err := <-watched:
		if err != nil {
			// The server refused the report, e.g. for a job it already ended on a forced cancel.
			log.InfoContext(ctx, "server ended the job stream with an error", "error", err)
		}
	case <-time.After(closeTimeout):
		log.WarnContext(ctx, "server did not close the job stream after the job ended")
	}
	log.DebugContext(ctx, "job done", "outcome", outcome, "duration", time.Since(started).Round(time.Millisecond))
	return nil
}

// errNotOurs: the server does not hold the job as this runner's running job (the ack was
// refused: the job expired, was canceled or went to another runner).
var errNotOurs = errors.New("the server does not hold the job as this runner's")

// awaitAck waits until the server has recorded the acknowledgement: GetJob shows the job
// running on this runner. Until then the server could still give the job to another runner
// (its ack deadline passes, or the replica holding the stream dies before the ack commits),
// so the job must not start. A cancel or a broken stream ends the wait (ctx's cause).
func (r *Runner) awaitAck(ctx context.Context, jobID string) error {
	wait := ackPollFirst
	deadline := time.Now().Add(ackConfirmTimeout)
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
		job, err := r.o.Client.GetJob(ctx, &vagrant.GetJobRequest{JobId: jobID})
		switch {
		case err != nil && ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil && time.Now().After(deadline):
			return status.Errorf(codes.Unavailable, "could not confirm the assignment of job %s with the server: %v", jobID, err)
		case err != nil:
		case job.GetState() == vagrant.Job_RUNNING && job.GetAssignedRunner().GetId() == r.o.ID:
			return nil
		case job.GetState() != vagrant.Job_WAITING || job.GetAssignedRunner().GetId() != r.o.ID:
			return errNotOurs
		}
		wait = min(2*wait, ackPollMax)
	}
}

// How the runner polls for its acknowledgement to be recorded: the first look comes once the
// ack has reached the server (which then answers when the ack is committed), the waits double
// up to ackPollMax, and ackConfirmTimeout (the server's default ack timeout) ends the attempt.
const (
	ackPollFirst      = time.Millisecond
	ackPollMax        = 200 * time.Millisecond
	ackConfirmTimeout = 30 * time.Second
)

// watchStream reads the server's side of a running job: a JobCancel cancels the job (forced:
// provider.ErrKilled, so processes are killed at once); a broken stream cancels it with
// errStreamLost. It returns nil when the server ends the stream normally.
func (r *Runner) watchStream(stream jobStream, cancelJob context.CancelCauseFunc, log *slog.Logger) error {
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			cancelJob(errStreamLost) // no-op when the job already ended
			return nil
		}
		if err != nil {
			cancelJob(fmt.Errorf("%w: %w", errStreamLost, err))
			return err
		}
		if c := resp.GetCancel(); c != nil {
			log.InfoContext(context.Background(), "job cancel received", "force", c.GetForce())
			if c.GetForce() {
				cancelJob(provider.ErrKilled)
			} else {
				cancelJob(errCanceled)
			}
		}
	}
}

// abortOnShutdown gives a running job ShutdownGrace once shutdown begins (ctx done), then
// cancels it with errShutdown; it returns when the job is done.
func (r *Runner) abortOnShutdown(ctx context.Context, jobDone <-chan struct{}, cancelJob context.CancelCauseFunc, log *slog.Logger) {
	select {
	case <-jobDone:
		return
	case <-ctx.Done():
	}
	log.Info("shutting down: letting the running job finish", "grace", r.o.ShutdownGrace)
	t := time.NewTimer(r.o.ShutdownGrace)
	defer t.Stop()
	select {
	case <-jobDone:
	case <-t.C:
		cancelJob(errShutdown)
	}
}

// heartbeat sends a Heartbeat every interval until the returned stop function is called.
func (r *Runner) heartbeat(ctx context.Context, s *sender) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.o.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A failed send means a broken stream, which watchStream reports.
				_ = s.send(&vagrant.RunnerJobStreamRequest{Event: &vagrant.RunnerJobStreamRequest_Heartbeat_{
					Heartbeat: &vagrant.RunnerJobStreamRequest_Heartbeat{}}})
			}
		}
	}()
	return func() { cancel(); <-done }
}

// jobStatus is the google.rpc.Status reported for a failed job.
func jobStatus(err, cause error) *spb.Status {
	switch {
	case errors.Is(cause, provider.ErrKilled):
		return status.New(codes.Canceled, "job force-canceled: its processes were killed").Proto()
	case errors.Is(cause, errCanceled):
		return status.New(codes.Canceled, "job canceled").Proto()
	case errors.Is(cause, errShutdown):
		host, _ := os.Hostname()
		return status.Newf(codes.Aborted, "vagrant-runner on %s shut down before the job finished; queue it again", host).Proto()
	}
	return status.Convert(err).Proto()
}

func outcomeOf(cause error) string {
	switch {
	case errors.Is(cause, provider.ErrKilled), errors.Is(cause, errCanceled):
		return "canceled"
	case errors.Is(cause, errShutdown):
		return "aborted"
	}
	return "error"
}

func (r *Runner) jobStarted(job *vagrant.Job) {
	r.state.addJob(job.GetId())
	if r.o.Metrics != nil {
		r.o.Metrics.running.Inc()
	}
}

func (r *Runner) jobEnded(job *vagrant.Job, outcome string, started time.Time) {
	r.state.removeJob(job.GetId())
	if r.o.Metrics != nil {
		op := operation.Name(job)
		r.o.Metrics.running.Dec()
		r.o.Metrics.jobs.WithLabelValues(op, outcome).Inc()
		r.o.Metrics.duration.WithLabelValues(op).Observe(time.Since(started).Seconds())
	}
}
