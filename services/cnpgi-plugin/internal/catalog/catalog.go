// Package catalog is the plugin's Postgres adapter (schema `cnpgi`): which WAL files were
// archived where, with their checksums, and the first WAL each server still needs. The
// object stores hold the data; the catalog makes lookups cheap. Base backups are in
// backups.go, the queue of archived WAL to announce in announce.go; history/ summarises a
// server's archive, rebuild/ recreates the catalog from a store. It writes what the rules
// (wal, backup, internal/events) return, events included, and decides nothing;
// catalogtest/ is its conformance suite.
package catalog

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// Schema is the plugin's own Postgres schema.
const Schema = "cnpgi"

// Migrations are the embedded, append-only migrations of schema cnpgi.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Open connects, migrates schema cnpgi (and the outbox tables the plugin's events use) and
// returns the catalog and its pool, for commands and tests; the plugin itself opens the pool
// with its service's Postgres step.
func Open(ctx context.Context, databaseURL string) (*Catalog, *pgxpool.Pool, error) {
	pool, err := service.OpenPostgres(ctx, databaseURL, Schema, Migrations)
	if err != nil {
		return nil, nil, err
	}
	return New(pool), pool, nil
}

// Catalog implements wal.Catalog on Postgres.
type Catalog struct {
	pool   *pgxpool.Pool
	outbox events.Outbox
}

var _ wal.Catalog = (*Catalog)(nil)

// New returns a Catalog on a pool whose search_path is the cnpgi schema.
func New(pool *pgxpool.Pool) *Catalog { return &Catalog{pool: pool} }

// Ping checks the database, for readiness and Identity.Probe.
func (c *Catalog) Ping(ctx context.Context) error { return c.pool.Ping(ctx) }

const fileColumns = `store, server, name, kind, timeline, size, stored_size, compression, sha256,
	system_identifier::text, object_key, archived_at`

func scanFile(row pgx.Row) (wal.ArchivedFile, error) {
	var (
		f        wal.ArchivedFile
		kind     string
		tli      int64
		comp     string
		sum      []byte
		sysID    pgtype.Text
		archived time.Time
	)
	err := row.Scan(&f.Store, &f.Server, &f.Name, &kind, &tli, &f.Size, &f.StoredSize, &comp, &sum, &sysID, &f.Key, &archived)
	if err != nil {
		return wal.ArchivedFile{}, err
	}
	f.Kind, f.Timeline, f.Compression, f.ArchivedAt = wal.Kind(kind), uint32(tli), wal.Compression(comp), archived
	copy(f.SHA256[:], sum)
	if sysID.Valid {
		if f.SystemID, err = strconv.ParseUint(sysID.String, 10, 64); err != nil {
			return wal.ArchivedFile{}, fmt.Errorf("catalog: bad system_identifier %q: %w", sysID.String, err)
		}
	}
	return f, nil
}

// File returns the record of one archived file.
func (c *Catalog) File(ctx context.Context, store, server, name string) (wal.ArchivedFile, bool, error) {
	f, err := scanFile(c.pool.QueryRow(ctx,
		`SELECT `+fileColumns+` FROM wal_files WHERE store = $1 AND server = $2 AND name = $3`, store, server, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return wal.ArchivedFile{}, false, nil
	}
	if err != nil {
		return wal.ArchivedFile{}, false, fmt.Errorf("catalog: read %s: %w", name, err)
	}
	return f, true, nil
}

// Record inserts f unless a record with its name exists, and returns what is stored. The
// file joins the queue of WAL to announce in the same transaction (the trigger of migration
// 002): Record is how newly archived files are recorded.
func (c *Catalog) Record(ctx context.Context, f wal.ArchivedFile) (wal.ArchivedFile, bool, error) {
	f, inserted, err := insertFile(ctx, c.pool, f)
	if err != nil {
		return wal.ArchivedFile{}, false, fmt.Errorf("catalog: record %s: %w", f.Name, err)
	}
	if inserted {
		return f, true, nil
	}
	stored, ok, err := c.File(ctx, f.Store, f.Server, f.Name)
	if err == nil && !ok {
		err = fmt.Errorf("catalog: record %s: row vanished after a conflicting insert", f.Name)
	}
	return stored, false, err
}

// insertFile inserts f unless a record with its name exists, and reports whether it did; f
// is returned with the time it was recorded with (now, when it had none).
func insertFile(ctx context.Context, db execer, f wal.ArchivedFile) (wal.ArchivedFile, bool, error) {
	var sysID pgtype.Text
	if f.SystemID != 0 {
		sysID = pgtype.Text{String: strconv.FormatUint(f.SystemID, 10), Valid: true}
	}
	if f.ArchivedAt.IsZero() {
		f.ArchivedAt = time.Now()
	}
	tag, err := db.Exec(ctx, `
		INSERT INTO wal_files (store, server, name, kind, timeline, size, stored_size, compression, sha256,
			system_identifier, object_key, archived_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::numeric, $11, $12)
		ON CONFLICT (store, server, name) DO NOTHING`,
		f.Store, f.Server, f.Name, string(f.Kind), int64(f.Timeline), f.Size, f.StoredSize, string(f.Compression),
		f.SHA256[:], sysID, f.Key, f.ArchivedAt)
	if err != nil {
		return f, false, err
	}
	return f, tag.RowsAffected() == 1, nil
}

// Status summarises one server's archive: first and last segment by name (the WAL order),
// counts, bytes stored and the first required WAL.
func (c *Catalog) Status(ctx context.Context, store, server string) (wal.Status, error) {
	var (
		st               wal.Status
		first, last, req pgtype.Text
		lastAt           pgtype.Timestamptz
	)
	err := c.pool.QueryRow(ctx, `
		SELECT
			(SELECT min(name) FROM wal_files WHERE store = $1 AND server = $2 AND kind = 'segment'),
			(SELECT max(name) FROM wal_files WHERE store = $1 AND server = $2 AND kind = 'segment'),
			count(*) FILTER (WHERE kind = 'segment'),
			coalesce(sum(stored_size), 0)::bigint,
			max(archived_at),
			(SELECT name FROM first_required_wal WHERE store = $1 AND server = $2)
		FROM wal_files WHERE store = $1 AND server = $2`, store, server).
		Scan(&first, &last, &st.Segments, &st.Bytes, &lastAt, &req)
	if err != nil {
		return wal.Status{}, fmt.Errorf("catalog: status of %s: %w", server, err)
	}
	st.FirstWAL, st.LastWAL, st.FirstRequired = first.String, last.String, req.String
	if lastAt.Valid {
		st.LastArchivedAt = lastAt.Time
	}
	return st, nil
}

// SetFirstRequired stores the oldest WAL file a backup of the server still needs.
func (c *Catalog) SetFirstRequired(ctx context.Context, store, server, name string) error {
	_, err := c.pool.Exec(ctx, `
		INSERT INTO first_required_wal (store, server, name) VALUES ($1, $2, $3)
		ON CONFLICT (store, server) DO UPDATE SET name = excluded.name, updated_at = now()`, store, server, name)
	if err != nil {
		return fmt.Errorf("catalog: set first required WAL of %s: %w", server, err)
	}
	return nil
}
