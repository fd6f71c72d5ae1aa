// Package store is lvmd-agent's Postgres adapter (schema `lvmd`): the volumes and capacity
// each node's agent last reported, and backup/restore jobs, with the events each change
// causes written to the outbox in the same transaction.
package store

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// Schema is the agent's own Postgres schema, shared by the agents of every node.
const Schema = "lvmd"

// Migrations are the embedded, append-only migrations of schema lvmd.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Store implements backup.JobStore and, per node (VolumeRecord), volume.Recorder on Postgres.
type Store struct {
	pool   *pgxpool.Pool
	outbox events.Outbox
}

// New returns a Store on a pool whose search_path is the lvmd schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// publish adds an event to the outbox of tx, on the subject its message declares.
func (s *Store) publish(ctx context.Context, tx pgx.Tx, payload proto.Message) error {
	_, err := s.outbox.Add(ctx, tx, events.Event{Payload: payload})
	return err
}

// Publish writes one event in its own transaction (the heartbeat, which changes no state).
func (s *Store) Publish(ctx context.Context, payload proto.Message) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error { return s.publish(ctx, tx, payload) })
}
