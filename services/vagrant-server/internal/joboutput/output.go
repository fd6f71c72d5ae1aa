package joboutput

import (
	"context"
	"time"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

// Event is one terminal event as runners send it and job streams return it.
type Event = vagrant.GetJobStreamResponse_Terminal_Event

// Entry is one stored event of a job's output.
type Entry struct {
	JobID string
	// Runner is the id of the runner that produced the output (the log stream's instance).
	Runner string
	// Seq numbers the job's events from 1 in the order the runner sent them.
	Seq int64
	// Time is the event's timestamp as the runner set it, else when it was stored.
	Time  time.Time
	Event *Event
}

// Scope is the basis, project and target a job's output belongs to, as resource ids. A job
// scoped to a target belongs to its project and basis as well; unset ids are empty.
type Scope struct {
	BasisID, ProjectID, TargetID string
}

// IsZero reports whether the scope names nothing: such output is in no log stream.
func (s Scope) IsZero() bool { return s == Scope{} }

// LogCursor is how far a log reader has read the output of a scope. Low is a watermark in
// Postgres' transaction order: output committed after the read that returned the cursor was
// written by a transaction numbered Low or higher. Seqs holds, per job, the highest event
// number already returned (or deliberately skipped), so rereading from Low repeats nothing.
type LogCursor struct {
	Low  uint64
	Seqs map[string]int64
}

// Store persists job output. *store.Store implements it on Postgres.
type Store interface {
	// AppendOutput stores events as events after..after+len-1 of job jobID, written by
	// runner, and records the job's scope with its first batch. Numbers already taken are an
	// error: a job has one writer.
	AppendOutput(ctx context.Context, jobID, runner string, scope Scope, after int64, events []*Event) error
	// AppendStatements returns the statements AppendOutput runs, for a caller that commits
	// them with the job's end (jobqueue's Complete and Fail take them).
	AppendStatements(jobID, runner string, scope Scope, after int64, events []*Event) ([]jobqueue.Stmt, error)
	// ReadOutput returns up to limit events of job jobID numbered above after, in order.
	ReadOutput(ctx context.Context, jobID string, after int64, limit int) ([]Entry, error)
	// LogBacklog returns the newest output of the jobs in scope, oldest first, stopping once
	// the entries hold at least limit lines as counted by lines (all output when limit < 0),
	// and a cursor after everything in the scope stored so far.
	LogBacklog(ctx context.Context, scope Scope, limit int, lines func(*Event) int) ([]Entry, LogCursor, error)
	// LogSince returns up to limit events of the scope stored since cur, oldest first, and
	// the advanced cursor.
	LogSince(ctx context.Context, scope Scope, cur LogCursor, limit int) ([]Entry, LogCursor, error)
}
