package catalog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/events"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

var _ events.Queue = (*Catalog)(nil)

// PendingWAL lists the servers with archived WAL files not yet announced (rows a trigger adds
// to wal_archived_pending in the transaction that records a file), the one waiting longest
// first.
func (c *Catalog) PendingWAL(ctx context.Context) ([]events.Backlog, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT store, server, count(*), min(archived_at) FROM wal_archived_pending
		GROUP BY store, server ORDER BY min(id)`)
	if err != nil {
		return nil, fmt.Errorf("catalog: WAL to announce: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Backlog, error) {
		var b events.Backlog
		return b, r.Scan(&b.Store, &b.Server, &b.Files, &b.Oldest)
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: WAL to announce: %w", err)
	}
	return out, nil
}

// AnnounceWAL claims up to limit of a server's pending files, oldest first (FOR UPDATE SKIP
// LOCKED: rows another process holds are left to it), passes them to announce and adds the
// events it returns to the outbox in the transaction that deletes the claimed rows. It
// reports false when there was nothing to claim.
func (c *Catalog) AnnounceWAL(ctx context.Context, store, server string, limit int,
	announce func([]wal.ArchivedFile) ([]platformevents.Event, error)) (bool, error) {
	claimed := false
	err := pg.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			DELETE FROM wal_archived_pending WHERE id IN (
				SELECT id FROM wal_archived_pending WHERE store = $1 AND server = $2
				ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
			RETURNING name, kind, size, stored_size, archived_at`, store, server, limit)
		if err != nil {
			return err
		}
		files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (wal.ArchivedFile, error) {
			f := wal.ArchivedFile{Store: store, Server: server}
			var kind string
			err := r.Scan(&f.Name, &kind, &f.Size, &f.StoredSize, &f.ArchivedAt)
			f.Kind = wal.Kind(kind)
			return f, err
		})
		if err != nil || len(files) == 0 {
			return err
		}
		evs, err := announce(files)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if _, err := c.outbox.Add(ctx, tx, e); err != nil {
				return err
			}
		}
		claimed = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("catalog: announce archived WAL of %s/%s: %w", store, server, err)
	}
	return claimed, nil
}
