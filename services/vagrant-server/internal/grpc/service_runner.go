package grpc

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// cleanupTimeout bounds the database work a stream does after its client went away.
const cleanupTimeout = 10 * time.Second

// GetRunner returns a registered runner as it registered (id, by_id_only, components).
func (s *Server) GetRunner(ctx context.Context, req *vagrant.GetRunnerRequest) (*vagrant.Runner, error) {
	if err := input.Required("runner_id", req.GetRunnerId(), maxID); err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get runner")
	}
	info, err := s.jobs.GetRunner(ctx, req.GetRunnerId())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "get runner", "runner_id", input.Quote(req.GetRunnerId()))
	}
	return info.Runner, nil
}

// RunnerConfig registers the runner its first message opens (id, by_id_only, components),
// sends the runner its configuration and keeps the stream open: the runner is online while
// it is, and marked offline when it ends (a newer registration of the same id, perhaps on
// another replica, stays online).
//
// The configuration is upstream's RunnerConfig of config vars. This server has no way to set
// config vars yet (upstream's ConfigSet RPC is not in its API), so it sends one empty
// configuration at registration; a later version that stores vars re-sends on change.
func (s *Server) RunnerConfig(stream grpc.BidiStreamingServer[vagrant.RunnerConfigRequest, vagrant.RunnerConfigResponse]) error {
	ctx, cancel := s.untilStopping(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return recvStatus(err)
	}
	open := first.GetOpen()
	if open == nil {
		return toStatus(ctx, s.log, streamErrorf("the first message of RunnerConfig must be open"), "doing", "register runner")
	}
	if open.GetRunner() == nil {
		return toStatus(ctx, s.log, input.Invalid("open.runner", "is required"), "doing", "register runner")
	}
	runner := open.GetRunner()
	registrant, err := registrantOf(ctx)
	if err != nil {
		return toStatus(ctx, s.log, err, "doing", "register runner")
	}
	session, err := s.jobs.RegisterRunner(ctx, runner, registrant)
	if err != nil {
		return toStatus(ctx, s.log, err, "doing", "register runner", "runner_id", input.Quote(runner.GetId()))
	}
	log := s.log.With("runner_id", input.Quote(runner.GetId()))
	log.InfoContext(ctx, "runner online", "by_id_only", runner.GetByIdOnly(), "components", len(runner.GetComponents()))
	defer func() {
		offCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := s.jobs.RunnerOffline(offCtx, runner.GetId(), session); err != nil {
			log.ErrorContext(ctx, "cannot mark runner offline", "error", err)
			return
		}
		log.InfoContext(ctx, "runner offline")
	}()
	if err := stream.Send(&vagrant.RunnerConfigResponse{Config: &vagrant.RunnerConfig{}}); err != nil {
		return err
	}
	// The runner sends nothing more; the stream lives as long as the runner.
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				ended <- err
				return
			}
		}
	}()
	select {
	case <-ctx.Done():
		return s.stopped(ctx)
	case err := <-ended:
		return recvStatus(err)
	}
}

// recvStatus is what a stream returns when receiving failed: nothing when the client
// closed its side (io.EOF), else the transport's status.
func recvStatus(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// registrantOf is who the call's token makes the registrant of a runner id (tokens.Caller):
// the id belongs to the first, and only its registrant's streams take its jobs.
func registrantOf(ctx context.Context) (string, error) {
	caller, ok := tokens.CallerFrom(ctx)
	if !ok {
		// The guard puts a caller into every runner call; without one nobody may own the id.
		return "", errors.New("runner call without an authenticated caller")
	}
	return caller.Registrant(), nil
}
