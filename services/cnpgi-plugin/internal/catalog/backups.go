package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/plinth-dev/plinth/libs/platform/pg"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

var _ backup.Catalog = (*Catalog)(nil)

// SaveBackup inserts or replaces a base backup's record.
func (c *Catalog) SaveBackup(ctx context.Context, r backup.Record) error {
	return saveBackup(ctx, c.pool, r)
}

// FinishBackup saves f.Record and adds f.Event to the outbox in one transaction, as
// backup.Finished decided them: the event is published if and only if the record is saved.
func (c *Catalog) FinishBackup(ctx context.Context, f backup.Finish) error {
	return pg.InTx(ctx, c.pool, func(tx pgx.Tx) error {
		if err := saveBackup(ctx, tx, f.Record); err != nil {
			return err
		}
		if _, err := c.outbox.Add(ctx, tx, f.Event); err != nil {
			return fmt.Errorf("catalog: finish backup %s: %w", f.Record.ID, err)
		}
		return nil
	})
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func saveBackup(ctx context.Context, db execer, r backup.Record) error {
	_, err := db.Exec(ctx, `
		INSERT INTO base_backups (store, server, backup_id, backup_name, status, timeline, begin_wal, end_wal,
			begin_lsn, end_lsn, begin_time, end_time, size, stored_size, compression, system_identifier,
			pg_version, instance, error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::pg_lsn, $10::pg_lsn, $11, $12, $13, $14, $15, $16::numeric, $17, $18, $19)
		ON CONFLICT (store, server, backup_id) DO UPDATE SET
			backup_name = excluded.backup_name, status = excluded.status, timeline = excluded.timeline,
			begin_wal = excluded.begin_wal, end_wal = excluded.end_wal, begin_lsn = excluded.begin_lsn,
			end_lsn = excluded.end_lsn, begin_time = excluded.begin_time, end_time = excluded.end_time,
			size = excluded.size, stored_size = excluded.stored_size, compression = excluded.compression,
			system_identifier = excluded.system_identifier, pg_version = excluded.pg_version,
			instance = excluded.instance, error = excluded.error, updated_at = now()`,
		r.Store, r.Server, r.ID, r.Name, string(r.Status), int64(r.Timeline), r.BeginWAL, r.EndWAL,
		lsnText(r.BeginLSN), lsnText(r.EndLSN), r.BeginTime, optTime(r.EndTime), r.Size, r.StoredSize,
		string(r.Compression), sysIDText(r.SystemID), r.PGVersion, r.Instance, r.Error)
	if err != nil {
		return fmt.Errorf("catalog: save backup %s: %w", r.ID, err)
	}
	return nil
}

// Backups lists a server's base backups, oldest first.
func (c *Catalog) Backups(ctx context.Context, store, server string) ([]backup.Record, error) {
	rows, err := c.pool.Query(ctx, `
		SELECT store, server, backup_id, backup_name, status, timeline, begin_wal, end_wal,
			coalesce(begin_lsn::text, ''), coalesce(end_lsn::text, ''), begin_time, end_time, size, stored_size,
			compression, system_identifier::text, pg_version, instance, error
		FROM base_backups WHERE store = $1 AND server = $2 ORDER BY begin_time, backup_id`, store, server)
	if err != nil {
		return nil, fmt.Errorf("catalog: backups of %s: %w", server, err)
	}
	out, err := pgx.CollectRows(rows, scanBackup)
	if err != nil {
		return nil, fmt.Errorf("catalog: backups of %s: %w", server, err)
	}
	return out, nil
}

func scanBackup(row pgx.CollectableRow) (backup.Record, error) {
	var (
		r                backup.Record
		status, comp     string
		tli              int64
		beginLSN, endLSN string
		endTime          pgtype.Timestamptz
		sysID            pgtype.Text
	)
	err := row.Scan(&r.Store, &r.Server, &r.ID, &r.Name, &status, &tli, &r.BeginWAL, &r.EndWAL, &beginLSN, &endLSN,
		&r.BeginTime, &endTime, &r.Size, &r.StoredSize, &comp, &sysID, &r.PGVersion, &r.Instance, &r.Error)
	if err != nil {
		return r, err
	}
	r.Status, r.Compression, r.Timeline = backup.Status(status), backup.Compression(comp), uint32(tli)
	if beginLSN != "" {
		r.BeginLSN, _ = backup.ParseLSN(beginLSN)
	}
	if endLSN != "" {
		r.EndLSN, _ = backup.ParseLSN(endLSN)
	}
	if endTime.Valid {
		r.EndTime = endTime.Time
	}
	if sysID.Valid {
		r.SystemID, _ = strconv.ParseUint(sysID.String, 10, 64)
	}
	return r, nil
}

// DeleteBackup removes a backup's record.
func (c *Catalog) DeleteBackup(ctx context.Context, store, server, id string) error {
	if _, err := c.pool.Exec(ctx, `DELETE FROM base_backups WHERE store = $1 AND server = $2 AND backup_id = $3`, store, server, id); err != nil {
		return fmt.Errorf("catalog: delete backup %s: %w", id, err)
	}
	return nil
}

// FirstRequiredWAL is the server's first required WAL, or "".
func (c *Catalog) FirstRequiredWAL(ctx context.Context, store, server string) (string, error) {
	var name string
	err := c.pool.QueryRow(ctx, `SELECT name FROM first_required_wal WHERE store = $1 AND server = $2`, store, server).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("catalog: first required WAL of %s: %w", server, err)
	}
	return name, nil
}

// DeleteWAL removes the records of archived WAL files (retention deleted their objects).
func (c *Catalog) DeleteWAL(ctx context.Context, store, server string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if _, err := c.pool.Exec(ctx, `DELETE FROM wal_files WHERE store = $1 AND server = $2 AND name = ANY($3)`, store, server, names); err != nil {
		return fmt.Errorf("catalog: delete WAL records of %s: %w", server, err)
	}
	return nil
}

func lsnText(l backup.LSN) pgtype.Text {
	if l == 0 {
		return pgtype.Text{}
	}
	return pgtype.Text{String: l.String(), Valid: true}
}

func optTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

func sysIDText(id uint64) pgtype.Text {
	if id == 0 {
		return pgtype.Text{}
	}
	return pgtype.Text{String: strconv.FormatUint(id, 10), Valid: true}
}
