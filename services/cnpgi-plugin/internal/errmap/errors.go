// Package errmap maps the plugin's domain errors to gRPC status codes, in one place for the
// handlers of every role (instance, operator, restore): each handler validates its input,
// calls its rule and returns ToStatus of the error, which logs the cause with what the
// handler was doing and sends the caller a code and a plain message only.
package errmap

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/grpcerr"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// ToStatus maps domain errors to gRPC status errors in one place. CloudNativePG treats
// every non-OK status as failure and shows the message to the user, so each message says
// what to do; the code tells other clients (our CLI, grpcurl users) whether to retry. attrs
// name what the handler was working on; they are logged with the cause, never sent.
//   - *backup.Error → by its Kind (backupCodes), with its public part only: the cause may
//     hold SQL or paths. Logged when it has a cause, or is Unavailable or a configuration
//     fault, which an operator must see.
//   - *input.Error → InvalidArgument: the request or the Cluster is wrong; the message names
//     the field.
//   - cluster.ErrPluginNotUsed, stores.ErrUnknownStore → FailedPrecondition: the Cluster and
//     the plugin's configuration disagree; fix one of them, retrying won't help.
//   - wal.ErrNotFound → NotFound: the archive lacks that WAL file (restore_command must
//     fail then; PostgreSQL ends recovery or switches to streaming).
//   - *wal.ConflictError → AlreadyExists: different bytes are archived under that name and
//     are never overwritten.
//   - *wal.NotEmptyError, *wal.UnreadableError → FailedPrecondition: the archive is not in
//     the state the call needs (not empty; a file in a compression the plugin cannot read,
//     which must never read as NotFound).
//   - *wal.LocalError → InvalidArgument when the request's path is wrong (outside PGDATA,
//     a directory, not a WAL segment, a name too long), else FailedPrecondition (a missing
//     directory or file, permissions, a full disk): its message says which, and the cause
//     of the latter is logged.
//   - wal.ErrSourceMissing, wal.ErrLocalFile → FailedPrecondition: the instance's files are
//     not as the call needs them; a fixed message, as the cause names local paths.
//   - context cancellation and deadlines → their codes (grpcerr), even when a store error
//     wraps them: the caller gave up, the store did not fail.
//   - objectstore.ErrDenied, objectstore.ErrBucketMissing → FailedPrecondition: the store
//     refuses the plugin's credentials or lacks its bucket; fix the store configuration.
//   - stores.ErrDecrypt → FailedPrecondition with its text (store, object and key ids,
//     never key material): the object was written with another key or damaged; configure the
//     key it was written with, retrying won't help.
//   - an unreachable catalog database (a Backup's record; WAL calls never wait on it) →
//     Unavailable naming the catalog, not the store.
//   - an unreachable S3 endpoint → Unavailable: retrying later (PostgreSQL does) can succeed.
//   - the rest goes to grpcerr.Unexpected, the suite's common tail: status errors pass, an
//     unreachable catalog database is Unavailable, anything else Internal with a fixed
//     message, the cause logged, never sent (it may hold paths, SQL or endpoints).
func ToStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var (
		berr     *backup.Error
		invalid  *input.Error
		conflict *wal.ConflictError
		notEmpty *wal.NotEmptyError
		unread   *wal.UnreadableError
		local    *wal.LocalError
		badStore *stores.InvalidObjectStoreError
	)
	switch {
	case errors.As(err, &berr):
		if berr.Err != nil || berr.Kind == backup.KindUnavailable || berr.Kind == backup.KindConfig {
			warn(ctx, log, "backup or recovery failed", err, attrs)
		}
		code, ok := backupCodes[berr.Kind]
		if !ok {
			code = codes.Internal
		}
		return status.Error(code, berr.Public())
	case errors.As(err, &invalid):
		return status.Error(codes.InvalidArgument, invalid.Error())
	case errors.Is(err, cluster.ErrPluginNotUsed), errors.Is(err, stores.ErrUnknownStore), errors.As(err, &badStore):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, stores.ErrObjectStoresUnreachable):
		warn(ctx, log, "the Kubernetes API is unreachable", err, attrs)
		return status.Error(codes.Unavailable, "the Kubernetes API is unreachable (reading an ObjectStore); retry later")
	case errors.Is(err, wal.ErrNotFound):
		return status.Error(codes.NotFound, wal.ErrNotFound.Error())
	case errors.As(err, &conflict):
		return status.Error(codes.AlreadyExists, conflict.Error())
	case errors.As(err, &notEmpty):
		return status.Error(codes.FailedPrecondition, notEmpty.Error())
	case errors.As(err, &unread):
		return status.Error(codes.FailedPrecondition, unread.Error())
	case errors.As(err, &local):
		if local.Invalid {
			return status.Error(codes.InvalidArgument, local.Public())
		}
		warn(ctx, log, "local file error", err, attrs)
		return status.Error(codes.FailedPrecondition, local.Public())
	case errors.Is(err, wal.ErrSourceMissing):
		return status.Error(codes.FailedPrecondition, "the WAL file to archive does not exist on the instance")
	case errors.Is(err, wal.ErrLocalFile):
		warn(ctx, log, "local file error", err, attrs)
		return status.Error(codes.FailedPrecondition, "the plugin cannot read the WAL file or write the destination")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return grpcerr.Unexpected(ctx, log, err, attrs...)
	case errors.Is(err, objectstore.ErrDenied):
		warn(ctx, log, "the object store refused the request", err, attrs)
		return status.Error(codes.FailedPrecondition, "the object store refused the plugin's credentials; check the store configuration")
	case errors.Is(err, objectstore.ErrBucketMissing):
		warn(ctx, log, "the object store lacks its bucket", err, attrs)
		return status.Error(codes.FailedPrecondition, "the object store's bucket does not exist; create it or fix the store configuration")
	case errors.Is(err, stores.ErrDecrypt):
		warn(ctx, log, "cannot decrypt an object", err, attrs)
		return status.Error(codes.FailedPrecondition, err.Error())
	case catalogUnreachable(err):
		warn(ctx, log, "the catalog database is unreachable", err, attrs)
		return status.Error(codes.Unavailable, "Plinth's catalog database is unreachable; retry later")
	case storeUnreachable(err):
		warn(ctx, log, "the object store is unreachable", err, attrs)
		return status.Error(codes.Unavailable, "the object store is unreachable; retry later")
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}

// backupCodes maps the kinds of backup and recovery failures; a kind missing here is
// Internal (a bug: every Kind the package defines is listed).
//   - KindInvalid → InvalidArgument: a parameter or the recovery target is wrong; the
//     message names it.
//   - KindPrecondition → FailedPrecondition: the instance, the data directory or the archive
//     is not in a state the operation can use (PGDATA not empty, WAL missing, PostgreSQL too
//     old); retrying as is will not help.
//   - KindNotFound → NotFound: no backup matches the recovery target.
//   - KindUnavailable → Unavailable: the instance cannot be reached now; retry.
//   - KindConfig → FailedPrecondition: the plugin's own configuration lacks something; the
//     operator of the plugin, not of the cluster, must fix it.
var backupCodes = map[backup.Kind]codes.Code{
	backup.KindInvalid:      codes.InvalidArgument,
	backup.KindPrecondition: codes.FailedPrecondition,
	backup.KindNotFound:     codes.NotFound,
	backup.KindUnavailable:  codes.Unavailable,
	backup.KindConfig:       codes.FailedPrecondition,
}

// PublicMessage is what a caller may see of an error reported beside a successful result
// (a failed retention after a backup): a backup error's public part, or a fixed sentence for
// causes that may carry endpoints or SQL.
func PublicMessage(err error) string {
	var e *backup.Error
	if errors.As(err, &e) {
		return e.Public()
	}
	return "retention could not finish; the plugin's log has the cause"
}

// warn logs a mapped error's cause with the RPC and what the handler was working on.
func warn(ctx context.Context, log *slog.Logger, msg string, err error, attrs []any) {
	method, _ := grpc.Method(ctx)
	log.WarnContext(ctx, msg, append([]any{"grpc.method", method, "error", err}, attrs...)...)
}

// storeUnreachable recognises failed connections to an S3 endpoint (refused, reset, no such
// host); the catalog database's are grpcerr's. (Not net.Error: syscall.Errno implements it
// too, so every local file error would look like a network one.)
// catalogUnreachable: the catalog's PostgreSQL refused or dropped the connection. Checked
// before storeUnreachable, which would take its *net.OpError for the object store's.
func catalogUnreachable(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}

func storeUnreachable(err error) bool {
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
	)
	return errors.As(err, &opErr) || errors.As(err, &dnsErr)
}
