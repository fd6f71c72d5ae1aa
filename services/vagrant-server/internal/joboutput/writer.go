package joboutput

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// Batching defaults: a batch is written when it holds MaxBatch events, or FlushDelay after
// its first event, whichever comes first — few transactions for chatty jobs, little delay
// for quiet ones.
const (
	DefaultMaxBatch   = 256
	DefaultFlushDelay = 50 * time.Millisecond
)

// Writer batches the output of one running job. It is driven by the job's stream goroutine
// and is not safe for concurrent use.
type Writer struct {
	store  Store
	jobID  string
	runner string
	scope  Scope
	// MaxBatch and FlushDelay tune batching; zero values take the defaults.
	MaxBatch   int
	FlushDelay time.Duration

	written int64    // events stored so far: the last number taken
	pending []*Event // events not yet stored
}

// NewWriter returns the writer of job jobID, run by runner, whose output belongs to scope.
func NewWriter(store Store, jobID, runner string, scope Scope) *Writer {
	return &Writer{store: store, jobID: jobID, runner: runner, scope: scope}
}

// Add queues events and reports whether the batch is full and should be flushed now.
// Events without a timestamp get the time they arrived.
func (w *Writer) Add(events []*Event) (full bool) {
	now := timestamppb.Now()
	for _, ev := range events {
		if ev.GetTimestamp() == nil {
			ev.Timestamp = now
		}
	}
	w.pending = append(w.pending, events...)
	return len(w.pending) >= w.maxBatch()
}

// Pending is the number of events not yet stored.
func (w *Writer) Pending() int { return len(w.pending) }

// Delay is how long after its first event a batch may wait.
func (w *Writer) Delay() time.Duration {
	if w.FlushDelay > 0 {
		return w.FlushDelay
	}
	return DefaultFlushDelay
}

func (w *Writer) maxBatch() int {
	if w.MaxBatch > 0 {
		return w.MaxBatch
	}
	return DefaultMaxBatch
}

// Flush stores the pending events, at most MaxBatch per transaction. On error the events
// stay pending, so a later Flush retries them with the same numbers.
func (w *Writer) Flush(ctx context.Context) error {
	for len(w.pending) > 0 {
		n := min(len(w.pending), w.maxBatch())
		if err := w.store.AppendOutput(ctx, w.jobID, w.runner, w.scope, w.written, w.pending[:n]); err != nil {
			return err
		}
		w.written += int64(n)
		w.pending = w.pending[n:]
	}
	w.pending = nil
	return nil
}

// Final returns the statements that store the pending events, to be committed with the
// job's end in one transaction; call Committed once they are. Nothing pending: none.
func (w *Writer) Final() ([]jobqueue.Stmt, error) {
	if len(w.pending) == 0 {
		return nil, nil
	}
	return w.store.AppendStatements(w.jobID, w.runner, w.scope, w.written, w.pending)
}

// Committed records that the statements Final returned were committed.
func (w *Writer) Committed() {
	w.written += int64(len(w.pending))
	w.pending = nil
}
