// Package grpc serves stats.StatsService, Koor's dashboard API, from the collector's newest
// view of the cluster.
package grpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// toStatus maps domain errors to gRPC status errors in one place. Each code is chosen for what
// the client should do next:
//   - cluster.ErrNoData → Unavailable: no source has answered yet (stats just started, or the
//     cluster is unreachable); retry later. The message names the sources, not their errors
//     (those may name internal addresses: they are in the log and on /readyz).
//   - cluster.ErrNoKoorCluster → NotFound with upstream's message: there is nothing to show.
//   - anything else → grpcerr.Unexpected: context errors keep their codes, the rest Internal
//     with a fixed message; the cause is logged with the RPC, never sent.
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, cluster.ErrNoData):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, cluster.ErrNoKoorCluster):
		return status.Error(codes.NotFound, err.Error())
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}
