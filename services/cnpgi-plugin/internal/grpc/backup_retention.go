package grpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// retentionTimeout bounds the retention run after a backup: deleting many objects on a slow
// store must not hold the Backup call open indefinitely; the next backup finishes the job.
const retentionTimeout = 10 * time.Minute

// retain applies the cluster's retention policy after a successful backup, to the store the
// backup went to, and reports the outcome in the backup's metadata (CloudNativePG keeps it in
// the Backup's status): the policy, what was deleted and the recovery window. A failed
// retention does not fail the backup — the backup is safely stored — it is logged and
// reported as retentionError, and the next backup tries again.
func (s *BackupServer) retain(ctx context.Context, call backupCall, md map[string]string) {
	if call.Retention == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, retentionTimeout)
	defer cancel()
	rep, err := s.svc.Retain(ctx, call.Target, *call.Retention, false)
	md["retentionPolicy"] = call.Retention.Spec()
	if err != nil {
		s.log.WarnContext(ctx, "retention after the backup failed; the next backup retries it", "store", call.Target.Store.Name,
			"server", call.Target.Server, "policy", call.Retention.Spec(), "error", err)
		md["retentionError"] = publicMessage(err)
		return
	}
	md["backupsDeleted"] = strconv.Itoa(len(rep.Deleted))
	md["walDeleted"] = strconv.Itoa(rep.WALDeleted)
	if !rep.FirstRecoverabilityPoint.IsZero() {
		md["firstRecoverabilityPoint"] = rep.FirstRecoverabilityPoint.UTC().Format(time.RFC3339)
	}
	if !rep.LastSuccessful.IsZero() {
		md["lastSuccessfulBackupTime"] = rep.LastSuccessful.UTC().Format(time.RFC3339)
	}
}

// publicMessage is what a caller may see of a backup error: its public part, or a generic
// sentence for causes that may carry endpoints or SQL.
func publicMessage(err error) string {
	var e *backup.Error
	if errors.As(err, &e) {
		return e.Public()
	}
	return "retention could not finish; the plugin's log has the cause"
}
