// Package store is the vagrant-server's Postgres adapter (schema `vagrant`): the registry
// (registry.Store, with target.state_changed events in its outbox), the token signing keys
// (tokens.KeyStore) and job output (joboutput.Store).
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Schema is the vagrant-server's own Postgres schema.
const Schema = "vagrant"

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// Migrations returns the embedded, append-only migrations of schema vagrant.
func Migrations() (fs.FS, error) { return fs.Sub(migrationFiles, "migrations") }

// Open connects to the database and migrates schema vagrant: the outbox tables, the job
// queue's tables (jobqueue.Migrations), then extra library-owned migration lines, then the
// service's own (registry, keys, job output). The order matters: job output references the
// queue's jobs table, so the queue's set is always applied first.
func Open(ctx context.Context, databaseURL string, extra ...pg.MigrationSet) (*Store, *pgxpool.Pool, error) {
	migrations, err := Migrations()
	if err != nil {
		return nil, nil, err
	}
	sets := append([]pg.MigrationSet{events.Migrations(), jobqueue.Migrations()}, extra...)
	pool, err := pg.Open(ctx, databaseURL, Schema, migrations, sets...)
	if err != nil {
		return nil, nil, err
	}
	return New(pool), pool, nil
}

// Store implements registry.Store and tokens.KeyStore on Postgres.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ registry.Store  = (*Store)(nil)
	_ tokens.KeyStore = (*Store)(nil)
)

// New returns a Store on a pool whose search_path is the vagrant schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// querier is what reads need: the pool, or the transaction of an update.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// notFound maps "no row" to the registry's *NotFoundError for resource with key.
func notFound(err error, resource, key string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.NotFound(resource, key)
	}
	return fmt.Errorf("select %s: %w", resource, err)
}

func byID(id string) string { return fmt.Sprintf("resource_id %q", id) }
