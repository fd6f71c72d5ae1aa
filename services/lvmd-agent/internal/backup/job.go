// Package backup copies logical volumes to S3 and back as jobs that survive the agent: a
// backup streams a consistent image of the volume (a snapshot with device-mapper, the
// inactive volume's extents on its physical volumes without) through compression and
// optional AES-256-GCM encryption into a multipart upload, with a manifest beside it; a
// restore writes a backup into a new volume and verifies its checksum. Job state lives in
// Postgres (JobStore) with an event for every change of state.
package backup

import (
	"context"
	"errors"
	"time"
)

// Kind says which way a job copies.
type Kind string

// The kinds of job.
const (
	KindBackup  Kind = "backup"
	KindRestore Kind = "restore"
)

// State is a job's state; lvmd's StateType names them INPROGRESS, COMPLETE and ERROR.
type State string

// The states of a job.
const (
	InProgress State = "in_progress"
	Complete   State = "complete"
	Failed     State = "error"
)

// Job is one backup or restore.
type Job struct {
	ID   int64
	Node string
	Kind Kind
	// Name is CreateBackup's name; for a restore, the new volume's name.
	Name string
	// VolumeHandle is the volume read (backup) or written (restore).
	VolumeHandle string
	DeviceClass  string
	State        State
	// Message says why a job failed.
	Message string
	// Retryable marks a job that failed because the agent stopped under it: the next
	// identical request (which carries the credentials again) restarts it.
	Retryable bool
	// Location is the S3 endpoint and path, without credentials.
	Location string
	// Store is where the backup lives, kept so that a listed backup can be restored or
	// deleted later (credentials are never kept). Zero for jobs recorded before it was.
	Store     StoreRef
	Encrypted bool
	// Synchronous marks a restore whose caller waits: on failure its volume is removed.
	Synchronous bool
	BytesDone   uint64
	SizeBytes   uint64
	// Owner is the agent process running it.
	Owner     string
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
	// StartedAt is when the latest attempt started; FinishedAt when the job ended (zero while
	// it runs).
	StartedAt  time.Time
	FinishedAt time.Time
}

// Outcome is how a job ended.
type Outcome struct {
	State     State
	Message   string
	BytesDone uint64
	// Retryable: the job was cut short by the agent stopping, not by its own failure.
	Retryable bool
}

// StoreRef is where a backup lives, without credentials: the endpoint ("" for AWS), bucket,
// prefix, whether TLS certificates are verified, and whether it is the agent's default store
// (whose credentials the agent has).
type StoreRef struct {
	Endpoint, Bucket, Prefix string
	VerifyTLS, Default       bool
}

// Known reports whether the job recorded where its backup is.
func (s StoreRef) Known() bool { return s.Bucket != "" && s.Prefix != "" }

// JobCursor is where a newest-first page of jobs continues: after the job started at
// StartedAt with ID (both from the previous page's last job).
type JobCursor struct {
	StartedAt time.Time
	ID        int64
}

// ErrJobNotFound: no job with that key.
var ErrJobNotFound = errors.New("job not found")

// JobStore keeps jobs; every change of state writes a BackupStateChanged event in the same
// transaction.
type JobStore interface {
	// Get returns the job of (node, kind, name, volume), or ErrJobNotFound.
	Get(ctx context.Context, node string, kind Kind, name, volume string) (Job, error)
	// Claim records j as in progress and returns it with claimed=true, unless a job of the
	// same key exists: then that job is returned unchanged (claimed=false), except one that
	// is Retryable — or, with restart, any job no longer in progress — which is restarted
	// from j (claimed=true).
	Claim(ctx context.Context, j Job, restart bool) (_ Job, claimed bool, err error)
	// Progress records bytes copied so far (no event).
	Progress(ctx context.Context, id int64, bytesDone uint64) error
	// Finish sets a running job's final state.
	Finish(ctx context.Context, id int64, o Outcome) (Job, error)
	// Interrupt fails (retryably) every job of node still in progress under another owner:
	// the agent that ran them is gone.
	Interrupt(ctx context.Context, node, owner, message string) (int, error)
	// JobByID returns node's job id, or ErrJobNotFound.
	JobByID(ctx context.Context, node string, id int64) (Job, error)
	// DeleteBackup removes a backup job that is not in progress, with a BackupDeleted event
	// saying objects were deleted; ErrJobNotFound when it is gone, ErrJobRunning when it
	// runs again.
	DeleteBackup(ctx context.Context, j Job, objects int) error
	// Dismiss removes a failed job (no event: nothing but the list changes); ErrJobNotFound
	// when it is gone, ErrNotFailed when it did not fail.
	Dismiss(ctx context.Context, node string, id int64) error
}
