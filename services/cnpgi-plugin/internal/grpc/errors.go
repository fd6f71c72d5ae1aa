package grpc

import (
	"github.com/plinth-dev/plinth/libs/platform/grpcerr"

	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// toStatus maps domain errors to gRPC status errors in one place. CloudNativePG treats
// every non-OK status as failure and shows the message to the user, so each message says
// what to do; the code tells other clients (our CLI, grpcurl users) whether to retry:
//   - *backup.Error → by its Kind (backup_errors.go).
//   - *input.Error → InvalidArgument: the request or the Cluster is
//     wrong; the message names the field.
//   - cluster.ErrPluginNotUsed, stores.ErrUnknownStore → FailedPrecondition: the
//     Cluster and the plugin's configuration disagree; fix one of them, retrying won't help.
//   - wal.ErrNotFound → NotFound: the archive lacks that WAL file (restore_command must
//     fail then; PostgreSQL ends recovery or switches to streaming).
//   - *wal.ConflictError → AlreadyExists: different bytes are archived under that name and
//     are never overwritten.
//   - *wal.LocalError → InvalidArgument when the request's path is wrong (outside PGDATA,
//     a directory, not a WAL segment, a name too long), else FailedPrecondition (a missing
//     directory or file, permissions, a full disk): its message says which, and the cause
//     is logged.
//   - *wal.NotEmptyError, *wal.UnreadableError → FailedPrecondition: the archive is not in
//     the state the call needs (not empty; a file in a compression the plugin cannot read,
//     which must never read as NotFound).
//   - objectstore.ErrDenied, objectstore.ErrBucketMissing → FailedPrecondition: the store
//     refuses the plugin's credentials or lacks its bucket; fix the store configuration.
//   - stores.ErrDecrypt → FailedPrecondition with its text (store, object and key ids,
//     never key material): the object was written with another key or damaged; configure the
//     key it was written with, retrying won't help.
//   - network and connection failures → Unavailable: the store or the catalog is down;
//     retrying later (PostgreSQL does) can succeed.
//   - an unreachable S3 endpoint → Unavailable: retrying later (PostgreSQL does) can succeed.
//   - the rest goes to grpcerr.Unexpected, the suite's common tail: status errors pass,
//     context errors keep their codes, an unreachable catalog database is Unavailable,
//     anything else Internal with a fixed message, logged with the RPC and attrs (what the
//     handler was working on), never sent (it may hold paths, SQL or endpoints).
func toStatus(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if err == nil {
		return nil
	}
	var (
		invalid  *input.Error
		conflict *wal.ConflictError
		notEmpty *wal.NotEmptyError
		local    *wal.LocalError
		unread   *wal.UnreadableError
		berr     *backup.Error
	)
	switch {
	case errors.As(err, &berr):
		return backupStatus(ctx, log, berr)
	case errors.As(err, &invalid):
		return status.Error(codes.InvalidArgument, invalid.Error())
	case errors.Is(err, cluster.ErrPluginNotUsed), errors.Is(err, stores.ErrUnknownStore):
		return status.Error(codes.FailedPrecondition, err.Error())
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
		log.WarnContext(ctx, "local file error", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.FailedPrecondition, local.Public())
	case errors.Is(err, wal.ErrSourceMissing):
		return status.Error(codes.FailedPrecondition, "the WAL file to archive does not exist on the instance")
	case errors.Is(err, wal.ErrLocalFile):
		log.WarnContext(ctx, "local file error", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.FailedPrecondition, "the plugin cannot read the WAL file or write the destination")
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return grpcerr.Unexpected(ctx, log, err, attrs...)
	case errors.Is(err, objectstore.ErrDenied):
		log.WarnContext(ctx, "the object store refused the request", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.FailedPrecondition, "the object store refused the plugin's credentials; check the store configuration")
	case errors.Is(err, objectstore.ErrBucketMissing):
		log.WarnContext(ctx, "the object store lacks its bucket", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.FailedPrecondition, "the object store's bucket does not exist; create it or fix the store configuration")
	case errors.Is(err, stores.ErrDecrypt):
		log.WarnContext(ctx, "cannot decrypt an object", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.FailedPrecondition, err.Error())
	case storeUnreachable(err):
		log.WarnContext(ctx, "the object store is unreachable", append([]any{"error", err}, attrs...)...)
		return status.Error(codes.Unavailable, "the object store is unreachable; retry later")
	}
	return grpcerr.Unexpected(ctx, log, err, attrs...)
}

// storeUnreachable recognises failed connections to an S3 endpoint (refused, reset, no such
// host); the catalog database's are grpcerr's. (Not net.Error: syscall.Errno implements it
// too, so every local file error would look like a network one.)
func storeUnreachable(err error) bool {
	var (
		opErr  *net.OpError
		dnsErr *net.DNSError
	)
	return errors.As(err, &opErr) || errors.As(err, &dnsErr)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func baseName(p string) string { return filepath.Base(p) }
