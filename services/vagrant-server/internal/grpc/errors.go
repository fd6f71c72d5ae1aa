package grpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// toStatus maps domain errors to gRPC status errors in one place. Each code says what the
// client should do next:
//   - *registry.FieldError, tokens.ErrBadDuration → InvalidArgument: fix the request; the
//     message starts with the field.
//   - registry.ErrNotFound → NotFound, as upstream answers Get/Find of a missing resource.
//   - *registry.PreconditionError → FailedPrecondition: the request is well-formed but the
//     registry's state refuses it (a taken name, a missing parent, a move); upstream uses the
//     same code for its validation failures.
//   - tokens.ErrBootstrapped → PermissionDenied, upstream's answer to a second bootstrap.
//   - tokens.ErrInvalid / ErrExpired → Unauthenticated: the token given is not usable.
//   - *jobqueue.ValidationError → InvalidArgument naming the job field.
//   - jobqueue.ErrUnknownOperation → Unimplemented: the job is well-formed but asks for an
//     operation this server does not have (a newer client); retrying will not help.
//   - jobqueue.ErrJobNotFound, ErrRunnerNotFound → NotFound (a runner must register through
//     RunnerConfig before asking for work).
//   - jobqueue.ErrWrongState → FailedPrecondition: e.g. a runner reporting on a job that is
//     no longer its own (it was canceled, or its assignment timed out).
//   - context errors → Canceled / DeadlineExceeded.
//   - anything else → Internal with a fixed message; the cause (which may hold SQL) is logged
//     with the trace id, never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	var fe *registry.FieldError
	var pe *registry.PreconditionError
	var ve *jobqueue.ValidationError
	switch {
	case errors.As(err, &fe):
		return status.Error(codes.InvalidArgument, fe.Error())
	case errors.As(err, &ve):
		return status.Error(codes.InvalidArgument, ve.Error())
	case errors.Is(err, jobqueue.ErrUnknownOperation):
		return status.Error(codes.Unimplemented, err.Error())
	case errors.Is(err, jobqueue.ErrJobNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, jobqueue.ErrRunnerNotFound):
		return status.Error(codes.NotFound, err.Error()+": register it with RunnerConfig first")
	case errors.Is(err, jobqueue.ErrWrongState):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, tokens.ErrBadDuration):
		return status.Error(codes.InvalidArgument, "duration: "+err.Error())
	case errors.Is(err, registry.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.As(err, &pe):
		return status.Error(codes.FailedPrecondition, pe.Error())
	case errors.Is(err, tokens.ErrBootstrapped):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, tokens.ErrExpired):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, tokens.ErrInvalid):
		return status.Error(codes.Unauthenticated, tokens.ErrInvalid.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	log.ErrorContext(ctx, "request failed", "error", err)
	return status.Error(codes.Internal, "internal error")
}
