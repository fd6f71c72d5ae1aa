package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// RecordActivity keeps a, then drops the entries more than keep older (by id); how many are
// kept is the inventory's (inventory.MaxActivity).
func (s *Store) RecordActivity(ctx context.Context, tx pgx.Tx, a inventory.Activity, keep int) error {
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO activity (at, subject, summary, actor_id, actor_name) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		a.At, a.Subject, a.Summary, a.ActorID, a.ActorName).Scan(&id); err != nil {
		return fmt.Errorf("record activity: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM activity WHERE id <= $1`, id-int64(keep)); err != nil {
		return fmt.Errorf("record activity: %w", err)
	}
	return nil
}

// Activity returns at most limit entries after cursor (its zero value: from the newest), newest
// first: by the events' time, then in the order recorded.
func (s *Store) Activity(ctx context.Context, after inventory.ActivityCursor, limit int) ([]inventory.Activity, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, at, subject, summary, actor_id, actor_name FROM activity
		WHERE $1 = 0 OR (at, id) < ($2, $1) ORDER BY at DESC, id DESC LIMIT $3`, after.ID, after.At, limit)
	if err != nil {
		return nil, fmt.Errorf("list activity: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inventory.Activity, error) {
		var a inventory.Activity
		err := r.Scan(&a.ID, &a.At, &a.Subject, &a.Summary, &a.ActorID, &a.ActorName)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list activity: %w", err)
	}
	return out, nil
}
