package pg

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	// ErrSchemaTooNew means the database was migrated by a newer build: running older
	// code against it could corrupt data, so the service refuses to start.
	ErrSchemaTooNew = errors.New("database schema is newer than this build")
	// ErrMigrationEdited means an applied migration's file changed afterwards.
	ErrMigrationEdited = errors.New("applied migration was edited")
)

type appliedRow struct {
	name     string
	checksum string
}

// migrate applies pending migrations in one transaction that holds an advisory lock
// keyed by the schema, so replicas starting together apply each migration once and
// a failing migration leaves nothing half-done.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, sets []loadedSet) error {
	return InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
			return fmt.Errorf("take migration lock: %w", err)
		}
		ident := pgx.Identifier{schema}.Sanitize()
		// Inside the lock: concurrent CREATE SCHEMA IF NOT EXISTS can still fail on the
		// catalog's unique index.
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
			return fmt.Errorf("set search_path: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
			source     text        NOT NULL,
			version    integer     NOT NULL,
			name       text        NOT NULL,
			checksum   text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (source, version))`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied, err := readApplied(ctx, tx, ident)
		if err != nil {
			return err
		}
		// Verify everything before applying anything, so a refusal changes nothing.
		for _, s := range sets {
			if err := verify(s, applied[s.source]); err != nil {
				return err
			}
		}
		for _, s := range sets {
			for _, m := range s.migrations {
				if _, done := applied[s.source][m.version]; done {
					continue
				}
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return fmt.Errorf("apply %s migration %s: %w", s.source, m.name, err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO `+ident+`.schema_migrations (source, version, name, checksum)
					VALUES ($1, $2, $3, $4)`, s.source, m.version, m.name, m.checksum); err != nil {
					return fmt.Errorf("record migration %s: %w", m.name, err)
				}
			}
		}
		return nil
	})
}

func readApplied(ctx context.Context, tx pgx.Tx, ident string) (map[string]map[int]appliedRow, error) {
	rows, err := tx.Query(ctx, "SELECT source, version, name, checksum FROM "+ident+".schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	out := map[string]map[int]appliedRow{}
	for rows.Next() {
		var source string
		var version int
		var r appliedRow
		if err := rows.Scan(&source, &version, &r.name, &r.checksum); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		if out[source] == nil {
			out[source] = map[int]appliedRow{}
		}
		out[source][version] = r
	}
	return out, rows.Err()
}

func verify(s loadedSet, applied map[int]appliedRow) error {
	newest := len(s.migrations)
	for v, row := range applied {
		if v < 1 {
			continue // never written by migrate; not ours to judge
		}
		if v > newest {
			return fmt.Errorf("%w: %s migration %d (%s) is applied but this build only knows up to %d; "+
				"deploy the newer build (or restore a backup taken before the upgrade)",
				ErrSchemaTooNew, s.source, v, row.name, newest)
		}
		if m := s.migrations[v-1]; m.checksum != row.checksum {
			return fmt.Errorf("%w: %s migration %s differs from the one applied (as %s); migrations are "+
				"append-only: restore the original file and put the change in a new migration",
				ErrMigrationEdited, s.source, m.name, row.name)
		}
	}
	return nil
}

// lockKey derives the advisory lock id from the schema: services in other schemas of
// the same database migrate without waiting for each other.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("plinth/pg/migrate:" + schema))
	return int64(h.Sum64())
}
