package grpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
//   - context errors → Canceled / DeadlineExceeded.
//   - anything else → Internal with a fixed message; the cause (which may hold SQL) is logged
//     with the trace id, never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	var fe *registry.FieldError
	var pe *registry.PreconditionError
	switch {
	case errors.As(err, &fe):
		return status.Error(codes.InvalidArgument, fe.Error())
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
