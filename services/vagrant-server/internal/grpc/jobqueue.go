package grpc

import (
	"context"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// JobQueue is what the Vagrant API needs of the job queue: *jobqueue.Queue on Postgres, and
// every implementation passes jobqueuetest. Errors match jobqueue's sentinels
// (jobqueue.ErrJobNotFound, ErrRunnerNotFound, ErrRunnerTaken, ErrWrongState,
// ErrUnknownOperation), which errors.go maps to status codes.
type JobQueue interface {
	// Queue validates job and queues it for owner, expiring (DEADLINE_EXCEEDED) when no
	// runner acknowledged it within expiresIn (0: never); it returns the job's id.
	Queue(ctx context.Context, job *vagrant.Job, expiresIn time.Duration, owner string) (string, error)
	// Validate checks job as Queue would, and with checkAssignable whether a registered
	// runner could take it.
	Validate(ctx context.Context, job *vagrant.Job, checkAssignable bool) (jobqueue.Validation, error)
	// Get returns job id.
	Get(ctx context.Context, id string) (*vagrant.Job, error)
	// List returns the jobs f selects, in queue order.
	List(ctx context.Context, f jobqueue.Filter) ([]*vagrant.Job, error)
	// PruneOldJobs deletes finished jobs beyond the newest keep, returning how many went.
	PruneOldJobs(ctx context.Context, keep int) (int64, error)
	// Cancel cancels job id: a queued one ends at once; a held one is asked to stop (ends at
	// once with force); a finished one is left alone.
	Cancel(ctx context.Context, jobID string, force bool) error
	// Watch follows job id's changes, from any replica; WatchHeld follows a job this
	// replica's runner stream holds.
	Watch(ctx context.Context, id string) (*jobqueue.Watch, error)
	WatchHeld(id string) *jobqueue.Watch

	// RegisterRunner records runner r for registrant, online, and returns its session.
	RegisterRunner(ctx context.Context, r *vagrant.Runner, registrant string) (int64, error)
	// RunnerOffline marks the runner offline when its stream of session ends.
	RunnerOffline(ctx context.Context, id string, session int64) error
	// CheckRegistrant answers whether registrant may take jobs as runner id.
	CheckRegistrant(ctx context.Context, id, registrant string) error
	// GetRunner returns a registered runner.
	GetRunner(ctx context.Context, id string) (*jobqueue.RunnerInfo, error)
	// ListRunners returns up to limit runners after the id after, in id order.
	ListRunners(ctx context.Context, after string, limit int) ([]jobqueue.ListedRunner, error)

	// Assign waits until a job runnerID can take is queued and assigns it (oldest first).
	Assign(ctx context.Context, runnerID string) (*vagrant.Job, error)
	// Ack, Nack, Heartbeat, Complete and Fail are the assigned runner's reports on its job;
	// stmts commit with the job's end (its last output).
	Ack(ctx context.Context, jobID, runner string) (*vagrant.Job, error)
	Nack(ctx context.Context, jobID, runner string) error
	Heartbeat(ctx context.Context, jobID, runner string) error
	Complete(ctx context.Context, jobID, runner string, result *vagrant.Job_Result, stmts ...jobqueue.Stmt) error
	Fail(ctx context.Context, jobID, runner string, st *spb.Status, stmts ...jobqueue.Stmt) error
}

var _ JobQueue = (*jobqueue.Queue)(nil)
