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

// Summary summarises the archive of server in store, in one round trip.
func (r *Reader) Summary(ctx context.Context, store, server string) (Summary, error) {
	var (
		s                                         Summary
		first, last                               pgtype.Text
		archived, firstPoint, lastDone, lastFails pgtype.Timestamptz
	)
	err := r.pool.QueryRow(ctx, `
		SELECT
			(SELECT count(*) FROM wal_files w WHERE w.store = $1 AND w.server = $2 AND w.kind = 'segment'),
			(SELECT coalesce(sum(stored_size), 0)::bigint FROM wal_files w WHERE w.store = $1 AND w.server = $2),
			(SELECT min(name) FROM wal_files w WHERE w.store = $1 AND w.server = $2 AND w.kind = 'segment'),
			(SELECT max(name) FROM wal_files w WHERE w.store = $1 AND w.server = $2 AND w.kind = 'segment'),
			(SELECT max(archived_at) FROM wal_files w WHERE w.store = $1 AND w.server = $2),
			count(*) FILTER (WHERE b.status = 'DONE'),
			min(b.end_time) FILTER (WHERE b.status = 'DONE'),
			max(b.end_time) FILTER (WHERE b.status = 'DONE'),
			max(coalesce(b.end_time, b.updated_at)) FILTER (WHERE b.status = 'FAILED')
		FROM base_backups b WHERE b.store = $1 AND b.server = $2`, store, server).
		Scan(&s.Segments, &s.StoredBytes, &first, &last, &archived, &s.Backups, &firstPoint, &lastDone, &lastFails)
	if err != nil {
		return Summary{}, fmt.Errorf("catalog: summary of %s/%s: %w", store, server, err)
	}
	s.FirstWAL, s.LastWAL = first.String, last.String
	s.LastArchivedAt = timeOf(archived)
	s.FirstRecoverabilityPoint, s.LastSuccessfulBackup, s.LastFailedBackup = timeOf(firstPoint), timeOf(lastDone), timeOf(lastFails)
	return s, nil
}

func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// Server names one server's archive in one store.
type Server struct {
	Store, Server string
}

// Servers lists every server the catalog holds WAL files or base backups of, ordered by
// store and server name; store "" means every store.
func (r *Reader) Servers(ctx context.Context, store string) ([]Server, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT store, server FROM wal_files WHERE $1 = '' OR store = $1
		UNION
		SELECT store, server FROM base_backups WHERE $1 = '' OR store = $1
		ORDER BY 1, 2`, store)
	if err != nil {
		return nil, fmt.Errorf("catalog: list servers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Server])
	if err != nil {
		return nil, fmt.Errorf("catalog: list servers: %w", err)
	}
	return out, nil
}

// Known reports whether the catalog holds anything (WAL files or base backups) of server in
// store.
func (r *Reader) Known(ctx context.Context, store, server string) (bool, error) {
	var ok bool
	err := r.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM wal_files WHERE store = $1 AND server = $2)
			OR EXISTS (SELECT 1 FROM base_backups WHERE store = $1 AND server = $2)`, store, server).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("catalog: look up %s/%s: %w", store, server, err)
	}
	return ok, nil
}
