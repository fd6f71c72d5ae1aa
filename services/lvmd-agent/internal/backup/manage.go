package backup

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Listed returns this node's job id (ErrJobNotFound for another node's or a missing one).
func (r *Runner) Listed(ctx context.Context, id int64) (Job, error) {
	return r.store.JobByID(ctx, r.node, id)
}

// RestorableBackup checks that job (named by the request's field) is a backup a restore can
// read: a complete backup job that recorded where it is.
func RestorableBackup(field string, j Job) error {
	switch {
	case j.Kind != KindBackup:
		return &NotBackupError{Field: field, Why: fmt.Sprintf("job %d is a restore, not a backup", j.ID)}
	case j.State != Complete:
		return &NotBackupError{Field: field, Why: fmt.Sprintf("backup %s is %s, not complete: only a complete backup can be restored", objectstore.Quote(j.Name), stateWord(j))}
	case !j.Store.Known():
		return ErrLocationUnknown
	}
	return nil
}

// stateWord is a job's state in words.
func stateWord(j Job) string {
	switch j.State {
	case InProgress:
		return "in progress"
	case Failed:
		return "failed"
	}
	return string(j.State)
}

// RestoreBackup restores a complete backup (from, a job of this node) into the new volume
// req.Volume with target t (the backup's store and the caller's credentials and key): it is
// Restore with the backup read first, and answers the restore job, in progress (or already
// done, for a request that asks again for a volume restored from it).
func (r *Runner) RestoreBackup(ctx context.Context, from Job, req RestoreRequest) (Job, error) {
	if err := RestorableBackup("backup_job_id", from); err != nil {
		return Job{}, err
	}
	if _, err := r.Restore(ctx, req); err != nil {
		return Job{}, err
	}
	return r.store.Get(ctx, r.node, KindRestore, req.Volume.Name, req.Volume.Name)
}

// DeleteBackup deletes backup job j's objects from its store t and then the job. The
// manifest goes first, so a backup half deleted is never restored; a path whose manifest
// names another backup (this job failed because the path was taken) is not touched.
func (r *Runner) DeleteBackup(ctx context.Context, j Job, t Target) (int, error) {
	switch {
	case j.Kind != KindBackup:
		return 0, &NotBackupError{Field: "backup_job_id", Why: fmt.Sprintf("job %d is a restore, not a backup: remove its volume instead", j.ID)}
	case j.State == InProgress:
		return 0, ErrJobRunning
	case !j.Store.Known():
		return 0, ErrLocationUnknown
	}
	st, err := t.open(r.partSize, r.concurrency)
	if err != nil {
		return 0, err
	}
	m, err := readManifest(ctx, st)
	switch {
	case err == nil && !m.belongsTo(j):
		return 0, &PathTakenError{Backup: m.Backup, VolumeHandle: m.VolumeHandle, Node: m.Node}
	case err != nil && !errors.Is(err, ErrNoBackup) && !errors.Is(err, ErrBadManifest):
		return 0, inStore(t, err)
	}
	n := 0
	if err == nil {
		if err := st.Delete(ctx, manifestKey); err != nil {
			return 0, inStore(t, err)
		}
		n++
	}
	var keys []string
	for o, err := range st.List(ctx, "") {
		if err != nil {
			return n, inStore(t, err)
		}
		keys = append(keys, o.Key)
	}
	for _, k := range keys {
		if err := st.Delete(ctx, k); err != nil {
			return n, inStore(t, err)
		}
		n++
	}
	if err := r.store.DeleteBackup(ctx, j, n); err != nil {
		return n, err
	}
	r.log.InfoContext(ctx, "backup deleted", "name", j.Name, "volume", j.VolumeHandle, "objects", n, "target", t)
	return n, nil
}

// Dismiss removes failed job id of this node from the list.
func (r *Runner) Dismiss(ctx context.Context, id int64) error {
	return r.store.Dismiss(ctx, r.node, id)
}
