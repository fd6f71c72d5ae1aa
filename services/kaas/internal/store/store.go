// Package store keeps kaas's clusters, node pools and machines in Postgres (schema kaas).
// It persists and decides nothing: every write is a cluster.Change the domain made (the
// view to save, its status already derived, and its events), written with its events
// (outbox) in one transaction.
package store

import (
	"context"
	"embed"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// Schema is kaas's Postgres schema.
const Schema = "kaas"

// WakeChannel is the NOTIFY channel that wakes reconcilers when a cluster needs work; its
// payload is always empty (nothing a client sent ever goes into a notification).
const WakeChannel = "plinth_kaas_reconcile"

// Migrations are kaas's own migrations (the outbox's come from the events library).
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Store is the Postgres store: cluster.Store for the API, reconciler.Store for the
// reconciler.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const clusterColumns = `id, uid, name, owner_id, owner_name, provider, version, target_version, status, status_message, deleting,
	ready_once, endpoint, attempts, last_error, created_at, updated_at`

// scanCluster reads clusterColumns, then extra columns into extra.
func scanCluster(row pgx.Row, extra ...any) (cluster.Cluster, error) {
	var c cluster.Cluster
	dest := append([]any{&c.ID, &c.UID, &c.Name, &c.Owner.ID, &c.Owner.Name, &c.Provider, &c.Version, &c.TargetVersion, &c.Status, &c.StatusMessage,
		&c.Deleting, &c.ReadyOnce, &c.Endpoint, &c.Attempts, &c.LastError, &c.CreatedAt, &c.UpdatedAt}, extra...)
	err := row.Scan(dest...)
	return c, err
}

// Get returns the cluster called name with its pools and machines.
func (s *Store) Get(ctx context.Context, name string) (cluster.View, error) {
	c, err := scanCluster(s.pool.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return cluster.View{}, cluster.NotFound(name)
	}
	if err != nil {
		return cluster.View{}, err
	}
	return s.loadView(ctx, s.pool, c)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (s *Store) loadView(ctx context.Context, q querier, c cluster.Cluster) (cluster.View, error) {
	v := cluster.View{Cluster: c}
	rows, err := q.Query(ctx, `SELECT name, role, instance_type, count, labels, deleting, next_ordinal
		FROM pools WHERE cluster_id = $1 ORDER BY id`, c.ID)
	if err != nil {
		return v, err
	}
	for rows.Next() {
		var p cluster.Pool
		var labels []labelJSON
		if err := rows.Scan(&p.Name, &p.Role, &p.InstanceType, &p.Count, &labels, &p.Deleting, &p.NextOrdinal); err != nil {
			rows.Close()
			return v, err
		}
		for _, l := range labels {
			p.Labels = append(p.Labels, cluster.Label{Name: l.Name, Value: l.Value})
		}
		v.Pools = append(v.Pools, p)
	}
	if err := rows.Err(); err != nil {
		return v, err
	}
	rows, err = q.Query(ctx, `SELECT id, pool, name, ordinal, role, state, version, provider_id, provider_state, hostname,
		addresses, provider_status, message, release, created_at FROM machines WHERE cluster_id = $1 ORDER BY id`, c.ID)
	if err != nil {
		return v, err
	}
	defer rows.Close()
	for rows.Next() {
		var m cluster.Machine
		if err := rows.Scan(&m.ID, &m.Pool, &m.Name, &m.Ordinal, &m.Role, &m.State, &m.Version, &m.ProviderID, &m.ProviderState,
			&m.Hostname, &m.Addresses, &m.ProviderStatus, &m.Message, &m.Release, &m.CreatedAt); err != nil {
			return v, err
		}
		v.Machines = append(v.Machines, m)
	}
	return v, rows.Err()
}

type labelJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func labelsJSON(ls []cluster.Label) []labelJSON {
	out := make([]labelJSON, 0, len(ls))
	for _, l := range ls {
		out = append(out, labelJSON{Name: l.Name, Value: l.Value})
	}
	return out
}

// Secrets returns the sealed key material of the cluster called name.
func (s *Store) Secrets(ctx context.Context, name string) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT secrets FROM clusters WHERE name = $1`, name).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, cluster.NotFound(name)
	}
	return sealed, err
}

// Detail returns the cluster called name and its sealed key material in one query.
func (s *Store) Detail(ctx context.Context, name string) (cluster.Cluster, []byte, error) {
	var sealed []byte
	c, err := scanCluster(s.pool.QueryRow(ctx, `SELECT `+clusterColumns+`, secrets FROM clusters WHERE name = $1`, name), &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, cluster.NotFound(name)
	}
	return c, sealed, err
}

// List returns every cluster, by name.
func (s *Store) List(ctx context.Context) ([]cluster.Cluster, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+clusterColumns+` FROM clusters ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (cluster.Cluster, error) { return scanCluster(r) })
}

// inTx runs fn in a transaction.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pg.InTx(ctx, s.pool, fn)
}

// History returns cluster name's status changes, oldest first (the newest 100 are kept).
func (s *Store) History(ctx context.Context, name string) ([]cluster.StatusEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT h.at, h.status, h.message, h.actor_username FROM status_history h
		JOIN clusters c ON c.id = h.cluster_id WHERE c.name = $1 ORDER BY h.id`, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (cluster.StatusEntry, error) {
		var e cluster.StatusEntry
		err := r.Scan(&e.Time, &e.Status, &e.Message, &e.Actor)
		return e, err
	})
}
