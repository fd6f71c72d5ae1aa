// Package events is what the plugin publishes on NATS through the outbox of
// libs/platform/events: plinth.cnpgi.wal.archived, archived WAL in batches (the Announcer:
// when a server's files are due, and the event one batch makes). The base backup events are
// decided where a backup finishes (backup.Finished). The catalog writes what these decide.
package events

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Options tune an Announcer.
type Options struct {
	// Batch is the most files one event names; a server with that many waiting is announced
	// at once (default 32).
	Batch int
	// Interval is the longest a file waits to be announced (default 10s).
	Interval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Backlog is one server's archived WAL files not yet announced.
type Backlog struct {
	Store, Server string
	// Files counts them; Oldest is when the oldest was archived.
	Files  int
	Oldest time.Time
}

// Queue is the catalog's record of archived WAL files waiting to be announced (a file joins
// it in the transaction that records it); *catalog.Catalog provides it.
type Queue interface {
	// PendingWAL lists the servers with files waiting, the one waiting longest first.
	PendingWAL(ctx context.Context) ([]Backlog, error)
	// AnnounceWAL claims up to limit of a server's waiting files, oldest first, skipping
	// those another process holds; passes them to announce and, in the transaction that
	// removes them from the queue, adds the events announce returns to the outbox. It
	// reports false when it claimed nothing.
	AnnounceWAL(ctx context.Context, store, server string, limit int, announce func([]wal.ArchivedFile) ([]events.Event, error)) (bool, error)
}

// Announcer turns the catalog's queue of archived WAL files into WALArchived events, one per
// batch, removing the files from the queue in the event's transaction: every archived file
// is announced exactly once, even across crashes, and several plugin processes sharing the
// catalog never announce a file twice.
type Announcer struct {
	queue Queue
	opts  Options
}

// NewAnnouncer announces the files queue holds.
func NewAnnouncer(queue Queue, o Options) *Announcer {
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Announcer{queue: queue, opts: o}
}

// Run announces until ctx ends. It looks at least once a second (or every Interval, when
// shorter) for servers with a full batch or a file older than Interval.
func (a *Announcer) Run(ctx context.Context) error {
	tick := time.NewTicker(min(time.Second, a.opts.Interval))
	defer tick.Stop()
	for {
		if _, err := a.Flush(ctx, false); err != nil && ctx.Err() == nil {
			a.opts.Logger.Warn("announcing archived WAL failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Flush writes the events that are due, or, with all, every waiting file; it returns how
// many events it wrote.
func (a *Announcer) Flush(ctx context.Context, all bool) (int, error) {
	n := 0
	for {
		pending, err := a.queue.PendingWAL(ctx)
		if err != nil {
			return n, fmt.Errorf("events: find WAL to announce: %w", err)
		}
		due := Due(pending, a.opts.Batch, a.opts.Interval, a.opts.Now(), all)
		if len(due) == 0 {
			return n, nil
		}
		wrote := false
		for _, b := range due {
			ok, err := a.queue.AnnounceWAL(ctx, b.Store, b.Server, a.opts.Batch, announce)
			if err != nil {
				return n, fmt.Errorf("events: announce archived WAL of %s/%s: %w", b.Store, b.Server, err)
			}
			if ok {
				n++
				wrote = true
			}
		}
		if !wrote { // every due file is claimed by another process
			return n, nil
		}
	}
}

// Due is the part of pending to announce now: with all, every server; otherwise the servers
// with a full batch waiting or a file that has waited interval — a busy server is announced
// in full batches, a quiet one is not kept waiting. The order of pending is kept.
func Due(pending []Backlog, batch int, interval time.Duration, now time.Time, all bool) []Backlog {
	var out []Backlog
	for _, b := range pending {
		if all || b.Files >= batch || !b.Oldest.After(now.Add(-interval)) {
			out = append(out, b)
		}
	}
	return out
}

// announce is the event of one batch of a server's files: WALArchived.
func announce(files []wal.ArchivedFile) ([]events.Event, error) {
	if len(files) == 0 {
		return nil, nil
	}
	return []events.Event{{Payload: WALArchived(files)}}, nil
}

// WALArchived announces files, one server's (the first file's store and server): their
// names in WAL order, how many are segments, their sizes and the span of their archiving.
func WALArchived(files []wal.ArchivedFile) *eventsv1.WALArchived {
	ev := &eventsv1.WALArchived{ObjectStore: files[0].Store, ServerName: files[0].Server}
	first, last := files[0].ArchivedAt, files[0].ArchivedAt
	for _, f := range files {
		ev.WalNames = append(ev.WalNames, f.Name)
		if f.Kind == wal.KindSegment {
			ev.Segments++
		}
		ev.SizeBytes += f.Size
		ev.StoredBytes += f.StoredSize
		if f.ArchivedAt.Before(first) {
			first = f.ArchivedAt
		}
		if f.ArchivedAt.After(last) {
			last = f.ArchivedAt
		}
	}
	// WAL file names sort in WAL order (timeline, log, segment); history files sort by
	// timeline among them.
	slices.Sort(ev.WalNames)
	ev.FirstArchivedAt, ev.LastArchivedAt = timestamppb.New(first), timestamppb.New(last)
	return ev
}
