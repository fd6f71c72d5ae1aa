package catalog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// WALNames lists the names of a server's catalogued WAL files.
func (c *Catalog) WALNames(ctx context.Context, store, server string) ([]string, error) {
	rows, err := c.pool.Query(ctx, `SELECT name FROM wal_files WHERE store = $1 AND server = $2 ORDER BY name`, store, server)
	if err != nil {
		return nil, fmt.Errorf("catalog: WAL of %s: %w", server, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("catalog: WAL of %s: %w", server, err)
	}
	return names, nil
}

// RecordFound adds WAL files found in a store (rebuilding the catalog) unless they are
// recorded already, in one transaction that does not announce them: they were archived
// before, and plinth.cnpgi.wal.archived is about new archiving. It returns how many rows
// were added.
func (c *Catalog) RecordFound(ctx context.Context, files []wal.ArchivedFile) (int, error) {
	added := 0
	err := pg.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL cnpgi.announce_wal = 'off'"); err != nil {
			return err
		}
		for _, f := range files {
			_, inserted, err := insertFile(ctx, tx, f)
			if err != nil {
				return fmt.Errorf("record %s: %w", f.Name, err)
			}
			if inserted {
				added++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("catalog: %w", err)
	}
	return added, nil
}
