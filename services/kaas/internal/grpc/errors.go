// Package grpc serves cnct.kaas.api.Cluster over the cluster rules, and the same API as
// upstream's REST paths through grpc-gateway.
package grpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// toStatus maps domain errors to gRPC status errors in one place. Each code says what the
// client should do next:
//   - *input.Error → InvalidArgument: fix the request; the message names the field.
//   - cluster.ErrNotFound → NotFound: the cluster or node pool does not exist (list first).
//   - cluster.ErrExists → AlreadyExists: the name is taken; pick another or use the existing.
//   - cluster.ErrConflict → FailedPrecondition: the request is valid but the cluster's state
//     refuses it now (being deleted, still being created, upgrading); retry once it changed.
//   - cluster.ErrUnmet → FailedPrecondition: the request is valid but the provider lacks what
//     its machines need (the message names it and how to get it); retry once it is there.
//   - cluster.ErrQuota → ResourceExhausted: the request is valid but would take the cluster's
//     owner beyond a per-user quota (the message names the limit and its setting); retry
//     once clusters or machines were deleted, or ask for the limit to be raised. Not
//     FailedPrecondition: nothing about the cluster's state is wrong, the user's share is used up.
//   - anything else → grpcerr.Unexpected: context errors keep their codes, an unreachable
//     database is Unavailable, the rest Internal with a fixed message; the cause is logged
//     with the RPC and attrs, never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var ie *input.Error
	switch {
	case errors.As(err, &ie):
		return status.Error(codes.InvalidArgument, ie.Error())
	case errors.Is(err, cluster.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, cluster.ErrExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, cluster.ErrConflict), errors.Is(err, cluster.ErrUnmet):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, cluster.ErrQuota):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}
