// Package store is the stats service's Postgres adapter (schema `stats`): the suite's node
// inventory, its activity and the usage history. It writes what the rules of inventory and
// cluster return and decides nothing.
package store

import (
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// Schema is the stats service's own Postgres schema.
const Schema = "stats"

// Migrations are the embedded, append-only migrations of schema stats.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Store implements inventory.Store and cluster.HistoryStore on Postgres.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ inventory.Store      = (*Store)(nil)
	_ cluster.HistoryStore = (*Store)(nil)
)

// New returns a Store on a pool whose search_path is the stats schema.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }
