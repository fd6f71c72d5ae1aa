package grpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// toStatus maps domain errors to gRPC status errors in one place. CloudNativePG treats
// every non-OK status as failure and shows the message to the user, so each message says
// what to do; the code tells other clients (our CLI, grpcurl users) whether to retry:
//   - *backup.Error → by its Kind (backup_errors.go).
//   - *wal.InvalidError, *cluster.Error → InvalidArgument: the request or the Cluster is
//     wrong; the message names the field.
//   - cluster.ErrPluginNotUsed, objectstore.ErrUnknownStore → FailedPrecondition: the
//     Cluster and the plugin's configuration disagree; fix one of them, retrying won't help.
//   - wal.ErrNotFound → NotFound: the archive lacks that WAL file (restore_command must
//     fail then; PostgreSQL ends recovery or switches to streaming).
//   - *wal.ConflictError → AlreadyExists: different bytes are archived under that name and
//     are never overwritten.
//   - *wal.NotEmptyError, wal.ErrSourceMissing, wal.ErrLocalFile → FailedPrecondition: the
//     archive or the instance is not in the state the call needs (a local file error is
//     logged: its path matters to whoever fixes it).
//   - objectstore.ErrDenied, objectstore.ErrBucketMissing → FailedPrecondition: the store
//     refuses the plugin's credentials or lacks its bucket; fix the store configuration.
//   - objectstore.ErrDecrypt → FailedPrecondition with its text (store, object and key ids,
//     never key material): the object was written with another key or damaged; configure the
//     key it was written with, retrying won't help.
//   - network and connection failures → Unavailable: the store or the catalog is down;
//     retrying later (PostgreSQL does) can succeed.
//   - context errors → Canceled / DeadlineExceeded.
//   - anything else → Internal with a fixed message; the cause is logged with the trace id,
//     never sent (it may hold paths, SQL or endpoints).
func toStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	var (
		invalid  *wal.InvalidError
		cerr     *cluster.Error
		conflict *wal.ConflictError
		notEmpty *wal.NotEmptyError
		berr     *backup.Error
	)
	switch {
	case errors.As(err, &berr):
		return backupStatus(ctx, log, berr)
	case errors.As(err, &invalid):
		return status.Error(codes.InvalidArgument, invalid.Error())
	case errors.As(err, &cerr):
		return status.Error(codes.InvalidArgument, cerr.Error())
	case errors.Is(err, cluster.ErrPluginNotUsed), errors.Is(err, objectstore.ErrUnknownStore):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, wal.ErrNotFound):
		return status.Error(codes.NotFound, wal.ErrNotFound.Error())
	case errors.As(err, &conflict):
		return status.Error(codes.AlreadyExists, conflict.Error())
	case errors.As(err, &notEmpty):
		return status.Error(codes.FailedPrecondition, notEmpty.Error())
	case errors.Is(err, wal.ErrSourceMissing):
		return status.Error(codes.FailedPrecondition, "the WAL file to archive does not exist on the instance")
	case errors.Is(err, wal.ErrLocalFile):
		log.WarnContext(ctx, "local file error", "error", err)
		return status.Error(codes.FailedPrecondition, "the plugin cannot read the WAL file or write the destination: check that it runs as the PostgreSQL user and the disk has room")
	}
	log.ErrorContext(ctx, "request failed", "error", err)
	switch {
	case errors.Is(err, objectstore.ErrDenied):
		return status.Error(codes.FailedPrecondition, "the object store refused the plugin's credentials; check the store configuration")
	case errors.Is(err, objectstore.ErrBucketMissing):
		return status.Error(codes.FailedPrecondition, "the object store's bucket does not exist; create it or fix the store configuration")
	case errors.Is(err, objectstore.ErrDecrypt):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case isUnreachable(err):
		return status.Error(codes.Unavailable, "the object store or the catalog database is unreachable; retry later")
	}
	return status.Error(codes.Internal, "internal error")
}

// isUnreachable recognises failed connections to the store or the catalog. (Not net.Error:
// syscall.Errno implements it too, so every local file error would look like a network one.)
func isUnreachable(err error) bool {
	var (
		opErr   *net.OpError
		dnsErr  *net.DNSError
		connErr *pgconn.ConnectError
	)
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.As(err, &connErr)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func baseName(p string) string { return filepath.Base(p) }
