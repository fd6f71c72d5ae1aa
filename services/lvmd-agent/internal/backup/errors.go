package backup

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// The domain's failures; internal/grpc/errors.go maps each to its status code.
var (
	// ErrNoBackup: the path holds no backup (no manifest).
	ErrNoBackup = errors.New("no backup at data_source.s3.path")
	// ErrBadManifest: the path holds something this agent cannot restore.
	ErrBadManifest = errors.New("the backup's manifest cannot be used")
	// ErrKeyRequired: the backup is encrypted and the request has no key.
	ErrKeyRequired = errors.New("the backup is encrypted: data_source.s3.encryption_key is required")
	// ErrChecksum: the restored bytes differ from what the backup recorded.
	ErrChecksum = errors.New("restored data does not match the backup's checksum")
	// ErrNotRestored: a volume of that name exists and no restore job wrote it.
	ErrNotRestored = errors.New("the volume exists and was not restored from a backup")
)

// KeyMismatchError: the request's key is not the one the backup was encrypted with.
type KeyMismatchError struct {
	// Backup and Given are key fingerprints, never keys.
	Backup, Given string
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("data_source.s3.encryption_key: the backup was encrypted with key %s, not with the given key %s", e.Backup, e.Given)
}

// TooSmallError: the new volume cannot hold the backup.
type TooSmallError struct {
	Backup, Volume uint64
}

func (e *TooSmallError) Error() string {
	return fmt.Sprintf("size_gb: the backup holds %d bytes; the volume of %d bytes is too small (need %d GiB)",
		e.Backup, e.Volume, (e.Backup+1<<30-1)>>30)
}

// PathTakenError: the backup's path already holds another backup.
type PathTakenError struct {
	Backup, VolumeHandle, Node string
}

func (e *PathTakenError) Error() string {
	return fmt.Sprintf("data_source.s3.path already holds backup %s of volume %s from node %s; give each backup its own path",
		objectstore.Quote(e.Backup), objectstore.Quote(e.VolumeHandle), objectstore.Quote(e.Node))
}

// Failures of the calls on a listed job (RestoreBackup, DeleteBackup, DismissJob).
var (
	// ErrJobRunning: the job is in progress; it cannot be deleted or dismissed now.
	ErrJobRunning = errors.New("the job is still in progress; wait for it to end")
	// ErrNotFailed: only a failed job is dismissed.
	ErrNotFailed = errors.New("only a failed job can be dismissed; delete a complete backup instead")
	// ErrLocationUnknown: the job was recorded before the agent kept where its backup is.
	ErrLocationUnknown = errors.New("the job was recorded before the agent kept where its backup is; restore it with CreateLV and data_source.s3.path")
	// ErrNoDefaultStore: the backup is in the agent's default store, which it no longer has.
	ErrNoDefaultStore = errors.New("the backup is in the agent's default store, which this agent no longer has; give the store's credentials")
)

// NotBackupError: the job named is not one this call takes.
type NotBackupError struct {
	// Field names the request's field; Why says what the job is instead.
	Field, Why string
}

func (e *NotBackupError) Error() string { return e.Field + ": " + e.Why }
