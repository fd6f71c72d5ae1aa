// Package grpcerr is the shared tail of every service's error mapping. A service's
// internal/grpc/errors.go maps its own domain errors first (InvalidArgument, NotFound, …) and
// hands everything else to Unexpected, which keeps one rule across the suite:
//   - a status error (input.Error and others implementing GRPCStatus) passes through;
//   - context cancellation and deadlines keep their codes;
//   - only errors known to be transient — the database or NATS unreachable — are Unavailable,
//     so clients retry exactly what a retry can fix;
//   - anything else is Internal with a fixed message. The cause is logged with the RPC and
//     the resource the handler was working on, never sent (it may hold SQL or paths).
package grpcerr

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Unexpected maps an error no domain rule recognised. attrs name what the handler was doing
// (e.g. "basis", name), quoted with input.Quote where they come from the client.
func Unexpected(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Err()
	}
	method, _ := grpc.Method(ctx)
	attrs = append([]any{"grpc.method", method, "error", err}, attrs...)
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case IsTransient(err):
		log.WarnContext(ctx, "a dependency is unreachable", attrs...)
		return status.Error(codes.Unavailable, "a dependency of the service is unavailable; retry later")
	}
	log.ErrorContext(ctx, "request failed unexpectedly", attrs...)
	return status.Error(codes.Internal, "internal error")
}

// IsTransient reports errors that a retry can fix: the database or NATS unreachable or timing
// out, a connection reset. Constraint violations, bad SQL and other server errors are not.
func IsTransient(err error) bool {
	var (
		connErr *pgconn.ConnectError
		pgErr   *pgconn.PgError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &connErr), pgconn.Timeout(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01-03: the server is shutting down or starting;
		// 53300: too many connections; 40001/40P01: serialization failure or deadlock.
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300", "40001", "40P01":
			return true
		}
		return len(pgErr.Code) == 5 && pgErr.Code[:2] == "08"
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &netErr):
		return netErr.Timeout()
	}
	return false
}
