package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
	"github.com/plinth-dev/plinth/libs/storage/compression"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// LVM is what jobs ask of lvm2 besides the volume service: snapshots to read a consistent
// volume, the layout that maps a metadata-only volume onto its physical volumes, and the
// clean-up of snapshots left by an interrupted job. lvm.Runner is the one implementation: a
// job copies a real device's bytes, so its tests run on real lvm2 (as root).
type LVM interface {
	MetadataOnly() bool
	VG(ctx context.Context, name string) (lvm.VGInfo, error)
	LVs(ctx context.Context, vg string) ([]lvm.LV, error)
	Segments(ctx context.Context, vg, lv string) ([]lvm.Segment, error)
	PVs(ctx context.Context, vg string) ([]lvm.PV, error)
	CreateSnapshot(ctx context.Context, vg, origin, name string, cow uint64) error
	Remove(ctx context.Context, vg, lv string) error
}

var _ LVM = (*lvm.Runner)(nil)

// Options configure a Runner.
type Options struct {
	Store   JobStore
	Volumes *volume.Service
	LVM     LVM
	// Node names this agent's node; Owner this process (jobs of other owners found in
	// progress at start were cut short).
	Node, Owner string
	// Compression of new backups (default zstd) and the compressor's threads (default 2).
	Compression compression.Kind
	Threads     int
	// PartSize and Concurrency of multipart uploads (objectstore's defaults when 0).
	PartSize    int64
	Concurrency int
	// ProgressInterval is how often bytes_done is recorded (default 2s).
	ProgressInterval time.Duration
	Logger           *slog.Logger
	// Observe, when set, is told of every finished job (metrics).
	Observe func(kind Kind, state State, bytes uint64, d time.Duration)
}

// Runner runs backup and restore jobs in the background of the agent. Close stops them;
// each records how it ended, so none stays in progress.
type Runner struct {
	store       JobStore
	volumes     *volume.Service
	lvm         LVM
	node, owner string
	compression compression.Kind
	threads     int
	partSize    int64
	concurrency int
	progress    time.Duration
	log         *slog.Logger
	observe     func(Kind, State, uint64, time.Duration)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[int64]*run
}

// run is a job running in this process.
type run struct {
	done chan struct{}
	err  error // set before done closes
}

// New returns a Runner; jobs start when requested.
func New(o Options) *Runner {
	if o.Compression == "" {
		o.Compression = compression.Zstd
	}
	if o.Threads <= 0 {
		o.Threads = 2
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Observe == nil {
		o.Observe = func(Kind, State, uint64, time.Duration) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{store: o.Store, volumes: o.Volumes, lvm: o.LVM, node: o.Node, owner: o.Owner,
		compression: o.Compression, threads: o.Threads, partSize: o.PartSize, concurrency: o.Concurrency,
		progress: o.ProgressInterval, log: o.Logger, observe: o.Observe,
		ctx: ctx, cancel: cancel, running: map[int64]*run{}}
}

// lvmCleanupTimeout bounds removing a snapshot or a failed restore's volume.
const lvmCleanupTimeout = 2 * time.Minute

// interruptedMessage is what a job cut short by the agent stopping says.
const interruptedMessage = "interrupted: the agent stopped during the job; the same request again restarts it"

// Recover runs at start: jobs a previous agent on this node left in progress are failed as
// retryable, and backup snapshots it left are removed.
func (r *Runner) Recover(ctx context.Context) error {
	n, err := r.store.Interrupt(ctx, r.node, r.owner, interruptedMessage)
	if err != nil {
		return fmt.Errorf("recover jobs: %w", err)
	}
	if n > 0 {
		r.log.Warn("jobs were cut short by an earlier stop; they restart when requested again", "jobs", n)
	}
	if err := r.removeStaleSnapshots(ctx); err != nil {
		r.log.Warn("could not remove stale backup snapshots", "error", err)
	}
	return nil
}

// Close stops the running jobs and waits (until ctx ends) for each to record its end.
func (r *Runner) Close(ctx context.Context) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("backup jobs did not stop in time: %w", ctx.Err())
	}
}

// start runs work for job on target t in the background and records its outcome.
func (r *Runner) start(job Job, t Target, work func(ctx context.Context, done *atomic.Uint64) error) *run {
	rn := &run{done: make(chan struct{})}
	r.mu.Lock()
	r.running[job.ID] = rn
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		began := time.Now()
		var done atomic.Uint64
		stopProgress := r.trackProgress(job.ID, &done)
		err := work(r.ctx, &done)
		stopProgress()
		out := Outcome{State: Complete, BytesDone: done.Load()}
		if err != nil {
			out = Outcome{State: Failed, Message: describe(err, t), BytesDone: done.Load(), Retryable: r.ctx.Err() != nil}
			if out.Retryable {
				out.Message = interruptedMessage
			}
		}
		r.finish(job, out)
		r.observe(job.Kind, out.State, out.BytesDone, time.Since(began))
		level := slog.LevelInfo
		if err != nil {
			level = slog.LevelWarn
		}
		// The job's message, not err: an error of the object store may quote what answered at
		// the client's endpoint (describe).
		r.log.Log(context.Background(), level, "job finished", "kind", job.Kind, "name", job.Name, "volume", job.VolumeHandle,
			"state", out.State, "bytes", out.BytesDone, "duration", time.Since(began), "error", out.Message)
		rn.err = err
		r.mu.Lock()
		delete(r.running, job.ID)
		r.mu.Unlock()
		close(rn.done)
	}()
	return rn
}

// finish records a job's outcome, retrying while the database is unreachable: a job must
// never stay in progress while its agent lives. (If the agent dies first, Recover fails it.)
func (r *Runner) finish(job Job, out Outcome) {
	b := backoff.Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := r.store.Finish(ctx, job.ID, out)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.log.Error("could not record a job's end; the next start fails it as interrupted", "job", job.ID, "error", err)
			return
		}
		r.log.Warn("could not record a job's end; retrying", "job", job.ID, "error", err)
		time.Sleep(b.Next())
	}
}

// trackProgress records bytes done every interval until stopped.
func (r *Runner) trackProgress(id int64, done *atomic.Uint64) (stop func()) {
	ctx, cancel := context.WithCancel(r.ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(r.progress)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := r.store.Progress(ctx, id, done.Load()); err != nil && ctx.Err() == nil {
					r.log.Debug("could not record job progress", "job", id, "error", err)
				}
			}
		}
	}()
	return func() { cancel(); <-finished }
}

// wait blocks until the job running as id ends or ctx does, and returns the job's error.
// A job not running here is looked up in the store.
func (r *Runner) wait(ctx context.Context, job Job) error {
	r.mu.Lock()
	rn, ok := r.running[job.ID]
	r.mu.Unlock()
	if ok {
		select {
		case <-rn.done:
			return rn.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	j, err := r.store.Get(ctx, job.Node, job.Kind, job.Name, job.VolumeHandle)
	switch {
	case err != nil:
		return err
	case j.State == Failed:
		return &JobError{Message: j.Message}
	case j.State == InProgress:
		return ErrElsewhere
	}
	return nil
}

// ErrElsewhere: the job is in progress but not in this process (an agent that has not yet
// noticed it stopped); retry later.
var ErrElsewhere = errors.New("the job is in progress in another agent process; retry later")

// JobError is a job's failure as recorded (its cause is in the agent's log).
type JobError struct{ Message string }

func (e *JobError) Error() string { return e.Message }
