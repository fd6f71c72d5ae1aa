package grpc

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// backupCodes maps the kinds of backup and recovery failures (see toStatus):
//   - KindInvalid → InvalidArgument: a parameter or the recovery target is wrong; the
//     message names it.
//   - KindPrecondition → FailedPrecondition: the instance, the data directory or the archive
//     is not in a state the operation can use (PGDATA not empty, WAL missing, PostgreSQL too
//     old); retrying as is will not help.
//   - KindNotFound → NotFound: no backup matches the recovery target.
//   - KindUnavailable → Unavailable: the instance cannot be reached now; retry.
//   - KindConfig → FailedPrecondition: the plugin's own configuration lacks something.
var backupCodes = map[backup.Kind]codes.Code{
	backup.KindInvalid: codes.InvalidArgument, backup.KindPrecondition: codes.FailedPrecondition,
	backup.KindNotFound: codes.NotFound, backup.KindUnavailable: codes.Unavailable, backup.KindConfig: codes.FailedPrecondition,
}

// backupStatus converts a *backup.Error; the cause, which may hold SQL or paths, is only
// logged.
func backupStatus(ctx context.Context, log *slog.Logger, e *backup.Error) error {
	if e.Err != nil || e.Kind == backup.KindUnavailable || e.Kind == backup.KindConfig {
		log.WarnContext(ctx, "backup or recovery failed", "error", e)
	}
	code, ok := backupCodes[e.Kind]
	if !ok {
		code = codes.Internal
	}
	return status.Error(code, e.Public())
}
