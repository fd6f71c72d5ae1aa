// Package store is the auth service's Postgres adapter (schema `auth`): users, tokens and
// failed-login counters, with the events each change causes written to the outbox in the same
// transaction.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Schema is the auth service's own Postgres schema.
const Schema = "auth"

// Migrations are the embedded, append-only migrations of schema auth.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Store implements identity.Store on Postgres.
type Store struct {
	pool   *pgxpool.Pool
	outbox events.Outbox
}

var _ identity.Store = (*Store)(nil)

// New returns a Store on a pool whose search_path is the auth schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// publish adds the events a rule returned to the outbox of tx, in order, each on the subject
// its message declares.
func (s *Store) publish(ctx context.Context, tx pgx.Tx, payloads ...proto.Message) error {
	for _, p := range payloads {
		if _, err := s.outbox.Add(ctx, tx, events.Event{Payload: p}); err != nil {
			return err
		}
	}
	return nil
}

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
