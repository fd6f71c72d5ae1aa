// Package events publishes what the plugin does on NATS, through the outbox of
// libs/platform/events: plinth.cnpgi.wal.archived, batched by the Announcer, and the base
// backup events plinth.cnpgi.backup.completed and .failed.
package events

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
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
}

// Announcer turns the catalog's wal_archived_pending rows (added by a trigger in the
// transaction that records an archived file) into WALArchived events in the outbox, one per
// batch, deleting the rows in the event's transaction: every archived file is announced
// exactly once, even across crashes, and several plugin processes sharing the catalog never
// announce a file twice (rows are claimed with SKIP LOCKED).
type Announcer struct {
	pool *pgxpool.Pool
	opts Options
	out  events.Outbox
}

// NewAnnouncer announces through pool's schema (the catalog's, where events.Migrations ran).
func NewAnnouncer(pool *pgxpool.Pool, o Options) *Announcer {
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Announcer{pool: pool, opts: o}
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

// Flush writes the events that are due, or, with all, every pending file; it returns how many
// events it wrote.
func (a *Announcer) Flush(ctx context.Context, all bool) (int, error) {
	n := 0
	for {
		due, err := a.due(ctx, all)
		if err != nil || len(due) == 0 {
			return n, err
		}
		wrote := false
		for _, d := range due {
			ok, err := a.announce(ctx, d[0], d[1])
			if err != nil {
				return n, err
			}
			if ok {
				n++
				wrote = true
			}
		}
		if !wrote { // every due row is claimed by another process
			return n, nil
		}
	}
}

// due lists the (store, server) pairs with a full batch or a file older than Interval.
func (a *Announcer) due(ctx context.Context, all bool) ([][2]string, error) {
	rows, err := a.pool.Query(ctx, `
		SELECT store, server FROM wal_archived_pending
		GROUP BY store, server
		HAVING $1 OR count(*) >= $2 OR min(archived_at) <= now() - make_interval(secs => $3)
		ORDER BY min(id)`, all, a.opts.Batch, a.opts.Interval.Seconds())
	if err != nil {
		return nil, fmt.Errorf("events: find WAL to announce: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var d [2]string
		return d, r.Scan(&d[0], &d[1])
	})
	if err != nil {
		return nil, fmt.Errorf("events: find WAL to announce: %w", err)
	}
	return out, nil
}

// pendingFile is one claimed wal_archived_pending row.
type pendingFile struct {
	name, kind   string
	size, stored int64
	at           time.Time
}

// announce claims up to Batch pending files of one server, oldest first, and writes their
// event in the transaction that deletes them. It reports false when another process holds
// them all.
func (a *Announcer) announce(ctx context.Context, store, server string) (bool, error) {
	wrote := false
	err := pg.InTx(ctx, a.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			DELETE FROM wal_archived_pending WHERE id IN (
				SELECT id FROM wal_archived_pending WHERE store = $1 AND server = $2
				ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING name, kind, size, stored_size, archived_at`, store, server, a.opts.Batch)
		if err != nil {
			return err
		}
		files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pendingFile, error) {
			var f pendingFile
			return f, r.Scan(&f.name, &f.kind, &f.size, &f.stored, &f.at)
		})
		if err != nil || len(files) == 0 {
			return err
		}
		if _, err := a.out.Add(ctx, tx, events.Event{Payload: walArchived(store, server, files)}); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("events: announce archived WAL of %s/%s: %w", store, server, err)
	}
	return wrote, nil
}

func walArchived(store, server string, files []pendingFile) *eventsv1.WALArchived {
	ev := &eventsv1.WALArchived{ObjectStore: store, ServerName: server}
	first, last := files[0].at, files[0].at
	for _, f := range files {
		ev.WalNames = append(ev.WalNames, f.name)
		if f.kind == "segment" {
			ev.Segments++
		}
		ev.SizeBytes += f.size
		ev.StoredBytes += f.stored
		if f.at.Before(first) {
			first = f.at
		}
		if f.at.After(last) {
			last = f.at
		}
	}
	// WAL file names sort in WAL order (timeline, log, segment); history files sort by
	// timeline among them.
	slices.Sort(ev.WalNames)
	ev.FirstArchivedAt, ev.LastArchivedAt = timestamppb.New(first), timestamppb.New(last)
	return ev
}
