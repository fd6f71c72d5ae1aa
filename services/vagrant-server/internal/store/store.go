// Package store is the vagrant-server's Postgres adapter (schema `vagrant`): the registry
// (registry.Store, writing the target.state_changed events the registry decides to its
// outbox), the token signing keys (tokens.KeyStore), session tokens (sessions.Store) and job
// output (joboutput.Store).
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Schema is the vagrant-server's own Postgres schema.
const Schema = "vagrant"

// Migrations are the embedded, append-only migrations of schema vagrant. They come after the
// job queue's (jobqueue.Migrations): job output references the queue's jobs table.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

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

func byID(id string) string { return quoted("resource_id %s", id) }

// quoted formats what an error says of values a client sent (a not-found key, a taken
// name): format with every value quoted, so that none can break the message.
func quoted(format string, values ...string) string {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = input.Quote(v)
	}
	return fmt.Sprintf(format, args...)
}
