package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/backoff"
)

// versionTimeout bounds the GetVersionInfo probe before each registration.
const versionTimeout = 10 * time.Second

// registerLoop keeps the runner registered: it holds a RunnerConfig stream open and reopens
// it with backoff whenever it fails, until ctx is done.
func (r *Runner) registerLoop(ctx context.Context) {
	bo := backoff.Backoff{Min: r.o.MinBackoff, Max: r.o.MaxBackoff}
	lastProblem := ""
	for ctx.Err() == nil {
		err := r.registerOnce(ctx, &bo)
		r.setRegistered(false, problem(err))
		if ctx.Err() != nil {
			return
		}
		r.countStreamError("config")
		wait := bo.Next()
		// Say each new problem once at warn level; repeats of it go to debug.
		if msg := problem(err); msg != lastProblem {
			r.log.WarnContext(ctx, "not registered with vagrant-server; retrying", "problem", msg, "retry_in", wait.Round(time.Millisecond))
			lastProblem = msg
		} else {
			r.log.DebugContext(ctx, "still not registered", "problem", msg, "retry_in", wait.Round(time.Millisecond))
		}
		backoff.Sleep(ctx, wait, nil)
	}
}

// registerOnce checks the server's protocol range, reads the token, opens RunnerConfig, registers, and then
// applies config updates until the stream ends. It returns why it ended.
func (r *Runner) registerOnce(ctx context.Context, bo *backoff.Backoff) error {
	// The version probe needs no token, so it tells "server away" from "no token".
	if err := r.checkVersion(ctx); err != nil {
		return err
	}
	if err := r.o.Credentials.Refresh(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.o.Client.RunnerConfig(ctx)
	if err != nil {
		return err
	}
	err = stream.Send(&vagrant.RunnerConfigRequest{Event: &vagrant.RunnerConfigRequest_Open_{
		Open: &vagrant.RunnerConfigRequest_Open{Runner: &vagrant.Runner{
			Id: r.o.ID, ByIdOnly: r.o.ByIDOnly, Components: r.o.Executor.Components(),
		}},
	}})
	if err != nil {
		_, recvErr := stream.Recv() // the real reason is on the receive side
		return errors.Join(err, recvErr)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		vars := resp.GetConfig().GetConfigVars()
		r.state.setVars(vars)
		if ok, _ := r.state.registered(); !ok {
			r.setRegistered(true, "")
			bo.Reset()
			r.log.InfoContext(ctx, "registered with vagrant-server", "by_id_only", r.o.ByIDOnly, "slots", r.o.Slots,
				"components", len(r.o.Executor.Components()), "config_vars", len(vars))
		} else {
			r.log.InfoContext(ctx, "runner config updated", "config_vars", len(vars))
		}
	}
}

// checkVersion asks the server which API protocol range it speaks (no token needed) and
// fails when it does not include ours.
func (r *Runner) checkVersion(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	resp, err := r.o.Client.GetVersionInfo(ctx, &emptypb.Empty{})
	if err != nil {
		return fmt.Errorf("GetVersionInfo: %w", err)
	}
	api := resp.GetInfo().GetApi()
	if api.GetCurrent() < apiProtocolMin || api.GetMinimum() > apiProtocolCurrent {
		return fmt.Errorf("server speaks API protocol %d..%d, this runner %d..%d: upgrade the older one",
			api.GetMinimum(), api.GetCurrent(), apiProtocolMin, apiProtocolCurrent)
	}
	return nil
}

func (r *Runner) setRegistered(ok bool, problem string) {
	r.state.setRegistered(ok, problem)
	if r.o.Metrics != nil {
		v := 0.0
		if ok {
			v = 1
		}
		r.o.Metrics.registered.WithLabelValues(r.o.ID).Set(v)
	}
}

// problem explains a registration failure in words an operator can act on.
func problem(err error) string {
	if err == nil {
		return "stream closed by the server"
	}
	if errors.Is(err, ErrNoToken) {
		return err.Error()
	}
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	switch st.Code() {
	case codes.Unauthenticated:
		return "the server refused the login token (" + st.Message() + "): set PLINTH_VAGRANT_TOKEN or the token file to a token from GenerateLoginToken"
	case codes.Unavailable:
		return "vagrant-server unreachable: " + st.Message()
	case codes.Unimplemented:
		return "the server does not serve runners (" + st.Message() + ")"
	}
	return st.Code().String() + ": " + st.Message()
}
