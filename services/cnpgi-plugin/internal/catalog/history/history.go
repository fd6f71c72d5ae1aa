// Package history summarises, from the catalog (schema cnpgi), what a server's archive holds:
// its WAL and its base backups. The Operator service reports it as the recovery window in the
// Cluster's status, the Metrics service as gauges.
package history

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// Summary is one server's archive in one store. Zero times mean "none".
type Summary struct {
	// Segments counts the archived WAL segments; StoredBytes is what all its archived WAL
	// files take in the store.
	Segments, StoredBytes int64
	// FirstWAL and LastWAL are the lowest and highest archived segment names.
	FirstWAL, LastWAL string
	// LastArchivedAt is when the newest WAL file was archived.
	LastArchivedAt time.Time
	// Backups counts the completed base backups.
	Backups int64
	// FirstRecoverabilityPoint is the end of the oldest completed base backup: the earliest
	// moment a recovery can reach.
	FirstRecoverabilityPoint time.Time
	// LastSuccessfulBackup and LastFailedBackup are when the newest completed and the newest
	// failed base backup ended.
	LastSuccessfulBackup, LastFailedBackup time.Time
}

// Reader reads summaries from the catalog.
type Reader struct {
	pool *pgxpool.Pool
}

// NewReader reads through pool, whose search_path is the cnpgi schema.
func NewReader(pool *pgxpool.Pool) *Reader { return &Reader{pool: pool} }

// serversSQL and backupsSQL read, in two round trips, what the summaries of every (store,
// server) pair their WHERE clause (%[1]s, over columns store and server of both tables)
// selects are made of: the servers in the database's order with their WAL aggregated (a
// server may have archived tens of thousands of files), then the base backups row by row
// (Summary.WithBackups counts them).
const (
	serversSQL = `
		WITH w AS (
			SELECT store, server,
				count(*) FILTER (WHERE kind = 'segment') AS segments,
				coalesce(sum(stored_size), 0)::bigint AS stored_bytes,
				min(name) FILTER (WHERE kind = 'segment') AS first_wal,
				max(name) FILTER (WHERE kind = 'segment') AS last_wal,
				max(archived_at) AS last_archived
			FROM wal_files WHERE %[1]s GROUP BY store, server
		), b AS (
			SELECT DISTINCT store, server FROM base_backups WHERE %[1]s
		)
		SELECT store, server, coalesce(w.segments, 0), coalesce(w.stored_bytes, 0), w.first_wal, w.last_wal, w.last_archived
		FROM w FULL JOIN b USING (store, server)
		ORDER BY store, server`
	backupsSQL = `SELECT store, server, status, end_time, updated_at FROM base_backups WHERE %[1]s`
)

// Server is one server's archive in one store, summarised.
type Server struct {
	Store, Server string
	Summary
}

// Servers summarises every server the catalog holds WAL files or base backups of, ordered by
// store and server name; store "" means every store. One query, however many servers.
func (r *Reader) Servers(ctx context.Context, store string) ([]Server, error) {
	if store == "" {
		return r.summaries(ctx, "true")
	}
	return r.summaries(ctx, "store = $1", store)
}

// Find summarises the archive of server in store; ok is false when the catalog holds
// nothing of it (no WAL file, no base backup).
func (r *Reader) Find(ctx context.Context, store, server string) (s Summary, ok bool, err error) {
	// Equality on both columns (not "$1 = '' OR ..."): the primary keys' indexes serve it.
	found, err := r.summaries(ctx, "store = $1 AND server = $2", store, server)
	if err != nil || len(found) == 0 {
		return Summary{}, false, err
	}
	return found[0].Summary, true, nil
}

// Summary summarises the archive of server in store (the zero Summary when it holds nothing).
func (r *Reader) Summary(ctx context.Context, store, server string) (Summary, error) {
	s, _, err := r.Find(ctx, store, server)
	return s, err
}

func (r *Reader) summaries(ctx context.Context, where string, args ...any) ([]Server, error) {
	// One snapshot for both queries: a backup recorded between them is in both or in neither.
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("catalog: summarise servers: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, fmt.Sprintf(serversSQL, where), args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: summarise servers: %w", err)
	}
	var (
		out         []Server
		sv          Server
		first, last pgtype.Text
		archived    pgtype.Timestamptz
	)
	_, err = pgx.ForEachRow(rows, []any{&sv.Store, &sv.Server, &sv.Segments, &sv.StoredBytes, &first, &last, &archived}, func() error {
		sv.FirstWAL, sv.LastWAL, sv.LastArchivedAt = first.String, last.String, timeOf(archived)
		out = append(out, sv)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: summarise servers: %w", err)
	}
	rows, err = tx.Query(ctx, fmt.Sprintf(backupsSQL, where), args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: summarise servers: %w", err)
	}
	backups := map[[2]string][]Backup{}
	var (
		store, server, status string
		end, updated          pgtype.Timestamptz
	)
	_, err = pgx.ForEachRow(rows, []any{&store, &server, &status, &end, &updated}, func() error {
		k := [2]string{store, server}
		backups[k] = append(backups[k], Backup{Status: backup.Status(status), End: timeOf(end), Updated: timeOf(updated)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: summarise servers: %w", err)
	}
	for i := range out {
		out[i].Summary = out[i].Summary.WithBackups(backups[[2]string{out[i].Store, out[i].Server}])
	}
	return out, nil
}

func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}
