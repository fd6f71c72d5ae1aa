package grpc

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// running follows an acknowledged job until the runner reports its end: output is stored
// as it arrives (batched), heartbeats move its deadline, Complete or Error end it. Output
// is always stored before the job ends, so whoever sees the job finished finds all of it.
func (rj *runnerJob) running(ctx context.Context, watch *jobqueue.Watch) error {
	w := joboutput.NewWriter(rj.s.output, rj.job.GetId(), rj.runner, rj.s.jobScope(ctx, rj.job))
	var flushTimer *time.Timer
	var flushC <-chan time.Time
	flush := func(ctx context.Context) error {
		if flushTimer != nil {
			flushTimer.Stop()
			flushTimer, flushC = nil, nil
		}
		if err := w.Flush(ctx); err != nil {
			return rj.toStatus(ctx, err, "run job")
		}
		return nil
	}
	// Whatever ends the stream, output that arrived is stored.
	defer func() {
		if w.Pending() == 0 {
			return
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := w.Flush(fctx); err != nil {
			rj.log.ErrorContext(ctx, "job output lost", "events", w.Pending(), "error", err)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			rj.log.WarnContext(ctx, "runner's stream ended while its job runs; the heartbeat deadline will end the job")
			return rj.toStatus(ctx, ctx.Err(), "run job")
		case <-flushC:
			if err := flush(ctx); err != nil {
				return err
			}
		case c := <-watch.C():
			if done, err := rj.onChange(ctx, c); done {
				return err
			}
		case m := <-rj.msgs:
			if m.err != nil {
				if errors.Is(m.err, io.EOF) {
					rj.log.WarnContext(ctx, "runner closed its stream without reporting the job's end; the heartbeat deadline will end it")
				}
				return recvStatus(m.err)
			}
			switch ev := m.req.GetEvent().(type) {
			case *vagrant.RunnerJobStreamRequest_Terminal:
				if w.Add(ev.Terminal.GetEvents()) {
					if err := flush(ctx); err != nil {
						return err
					}
				} else if flushC == nil && w.Pending() > 0 {
					flushTimer = time.NewTimer(w.Delay())
					flushC = flushTimer.C
				}
			case *vagrant.RunnerJobStreamRequest_Heartbeat_:
				if err := rj.heartbeat(ctx); err != nil {
					return err
				}
			case *vagrant.RunnerJobStreamRequest_Complete_:
				return rj.end(ctx, "complete", w, func(out []jobqueue.Stmt) error {
					return rj.s.jobs.Complete(ctx, rj.job.GetId(), rj.runner, ev.Complete.GetResult(), out...)
				})
			case *vagrant.RunnerJobStreamRequest_Error_:
				return rj.end(ctx, "error", w, func(out []jobqueue.Stmt) error {
					return rj.s.jobs.Fail(ctx, rj.job.GetId(), rj.runner, ev.Error.GetError(), out...)
				})
			default:
				rj.s.acks.drop(rj.job.GetId(), m.ack) // a second ack
				return rj.toStatus(ctx, streamErrorf("unexpected %s while the job runs: send terminal, heartbeat, complete or error", eventName(m.req)), "run job")
			}
		}
	}
}

// heartbeat moves the job's deadline. Refused (the job is no longer the runner's: it was
// force-canceled), the runner is told to stop at once and the stream ends.
func (rj *runnerJob) heartbeat(ctx context.Context) error {
	err := rj.s.jobs.Heartbeat(ctx, rj.job.GetId(), rj.runner)
	if !errors.Is(err, jobqueue.ErrWrongState) {
		return rj.toStatus(ctx, err, "run job")
	}
	if !rj.forceSent {
		if err := rj.sendCancel(ctx, true); err != nil {
			return err
		}
	}
	return rj.toStatus(ctx, err, "run job")
}

// end records the runner's final word on the job, with the output not yet stored, in one
// commit (finish is Complete or Fail): the stream ends OK once it is recorded. The output
// is committed also when the job is no longer the runner's to end.
func (rj *runnerJob) end(ctx context.Context, how string, w *joboutput.Writer, finish func([]jobqueue.Stmt) error) error {
	out, err := w.Final()
	if err == nil {
		err = finish(out)
		if err == nil || errors.Is(err, jobqueue.ErrWrongState) || errors.Is(err, jobqueue.ErrJobNotFound) {
			w.Committed()
		}
	}
	if err != nil {
		return rj.toStatus(ctx, err, "run job")
	}
	rj.log.DebugContext(ctx, "job ended", "reported", how)
	return nil
}
