package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// table is one registry resource's table (basis, project, target, box), for what they all
// do alike: read a row by resource_id, insert one and read it back, and rewrite one under
// its row lock. A resource's file says only what differs: its statements, its columns and
// how it reads a row.
type table[M proto.Message] struct {
	// byID selects the row whose resource_id is $1, as read expects; lock is byID's suffix
	// that holds the row (FOR UPDATE, OF the resource's own table in a join).
	byID, lock string
	// insert writes a new row: resource_id, the parent's resource_id when the resource has
	// a parent, then columns. update rewrites the row whose resource_id is $1 from columns
	// ($2…).
	insert, update string
	// columns are m's stored columns after resource_id (and its parent's), in table order.
	columns func(m M) ([]any, error)
	// read reads the one row query selects; key names it in a *registry.NotFoundError.
	read func(ctx context.Context, q querier, key, query string, args ...any) (M, error)
}

// get returns the row id.
func (t table[M]) get(ctx context.Context, q querier, id string) (M, error) {
	return t.read(ctx, q, byID(id), t.byID, id)
}

// create inserts m, whose resource_id is id (and parent its parent's, for a resource that
// has one), through q and reads it back.
func (t table[M]) create(ctx context.Context, q querier, m M, id string, parent ...any) (M, error) {
	var zero M
	cols, err := t.columns(m)
	if err != nil {
		return zero, err
	}
	if _, err := q.Exec(ctx, t.insert, append(append([]any{id}, parent...), cols...)...); err != nil {
		return zero, writeError(err, m)
	}
	return t.get(ctx, q, id)
}

// change loads row id holding it, lets change turn it into what is to be stored (change may
// also write in tx, e.g. the change's events), writes that and reads it back, in one
// transaction, so that concurrent upserts never lose each other's fields. change's error
// is returned unchanged and nothing is written.
func (t table[M]) change(ctx context.Context, pool *pgxpool.Pool, id string, change func(tx pgx.Tx, before M) (M, error)) (M, error) {
	var out M
	err := pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		before, err := t.read(ctx, tx, byID(id), t.byID+t.lock, id)
		if err != nil {
			return err
		}
		after, err := change(tx, before)
		if err != nil {
			return err
		}
		cols, err := t.columns(after)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, t.update, append([]any{id}, cols...)...); err != nil {
			return writeError(err, after)
		}
		out, err = t.get(ctx, tx, id)
		return err
	})
	return out, err
}

// inPlace is a change made by update on the row as loaded (the registry's UpdateBasis,
// UpdateProject and UpdateBox callbacks).
func inPlace[M proto.Message](update func(M) error) func(pgx.Tx, M) (M, error) {
	return func(_ pgx.Tx, m M) (M, error) { return m, update(m) }
}

// collect reads every row query selects with args, as scan makes it: a list, or the
// references to a row's children (a basis's projects, a project's targets, a target's
// subtargets). what names the rows in an error.
func collect[R any](ctx context.Context, q querier, what, query string, scan pgx.RowToFunc[R], args ...any) ([]R, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return pgx.CollectRows(rows, scan)
}
