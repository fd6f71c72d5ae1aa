// Package store is the auth service's Postgres adapter (schema `auth`): users, tokens and
// failed-login counters, with the events each change causes written to the outbox in the same
// transaction.
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
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Schema is the auth service's own Postgres schema.
const Schema = "auth"

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// Migrations returns the embedded, append-only migrations of schema auth.
func Migrations() (fs.FS, error) { return fs.Sub(migrationFiles, "migrations") }

// Open connects to the database, migrates schema auth (and the outbox tables) and returns a
// Store on it.
func Open(ctx context.Context, databaseURL string) (*Store, *pgxpool.Pool, error) {
	migrations, err := Migrations()
	if err != nil {
		return nil, nil, err
	}
	pool, err := pg.Open(ctx, databaseURL, Schema, migrations, events.Migrations())
	if err != nil {
		return nil, nil, err
	}
	return New(pool), pool, nil
}

// Store implements identity.Store on Postgres.
type Store struct {
	pool   *pgxpool.Pool
	outbox events.Outbox
}

var _ identity.Store = (*Store)(nil)

// New returns a Store on a pool whose search_path is the auth schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// publish adds an event to the outbox of tx; the subject names the event (subjects.proto).
func (s *Store) publish(ctx context.Context, tx pgx.Tx, subject string, payload proto.Message) error {
	_, err := s.outbox.Add(ctx, tx, events.Event{Subject: subject, Payload: payload})
	return err
}

// Subjects of the events auth publishes (see proto/plinth/events/v1/subjects.proto).
const (
	SubjectTokenRevoked   = "plinth.auth.token.revoked"
	SubjectLoginSucceeded = "plinth.auth.login.succeeded"
	SubjectLoginFailed    = "plinth.auth.login.failed"
)

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return identity.ErrNotFound
	}
	return fmt.Errorf("%s: %w", what, err)
}
