package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// Claim takes the lease on the cluster that is due longest (next_reconcile_at passed) and
// held by nobody, for owner until lease from now. ok is false when no cluster is due.
// SKIP LOCKED lets replicas claim side by side, each a different cluster.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (cluster.Claim, bool, error) {
	var c cluster.Claim
	err := s.pool.QueryRow(ctx, `UPDATE clusters SET lease_owner = $1, lease_expires = now() + $2 * interval '1 microsecond'
		WHERE id = (SELECT id FROM clusters
			WHERE next_reconcile_at <= now() AND (lease_expires IS NULL OR lease_expires < now())
			ORDER BY next_reconcile_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING id, name, generation`, owner, lease.Microseconds()).Scan(&c.ID, &c.Name, &c.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return cluster.Claim{}, false, nil
	}
	return c, err == nil, err
}

// Renew extends owner's lease; cluster.ErrLeaseLost when owner no longer holds it.
func (s *Store) Renew(ctx context.Context, id int64, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE clusters SET lease_expires = now() + $3 * interval '1 microsecond'
		WHERE id = $1 AND lease_owner = $2 AND lease_expires > now()`, id, owner, lease.Microseconds())
	if err == nil && tag.RowsAffected() == 0 {
		return cluster.ErrLeaseLost
	}
	return err
}

// Release gives up owner's lease and schedules the next pass after delay — at once when the
// API changed the cluster since the claim (its generation moved).
func (s *Store) Release(ctx context.Context, c cluster.Claim, owner string, delay time.Duration) error {
	_, err := s.pool.Exec(ctx, `UPDATE clusters SET lease_owner = NULL, lease_expires = NULL,
		next_reconcile_at = CASE WHEN generation <> $3 THEN now() ELSE now() + $4 * interval '1 microsecond' END
		WHERE id = $1 AND lease_owner = $2`, c.ID, owner, c.Generation, delay.Microseconds())
	return err
}

// Load returns the claimed cluster's view and sealed key material.
func (s *Store) Load(ctx context.Context, id int64) (cluster.View, []byte, error) {
	var v cluster.View
	var sealed []byte
	c, err := scanCluster(s.pool.QueryRow(ctx, `SELECT `+clusterColumns+`, secrets FROM clusters WHERE id = $1`, id), &sealed)
	if err != nil {
		return v, nil, err
	}
	v, err = s.loadView(ctx, s.pool, c)
	return v, sealed, err
}

// Apply passes the claimed cluster's current view to update and writes the change it
// returns (see save), provided owner still holds the lease: a reconciler whose lease lapsed
// (it stalled, another took over) gets cluster.ErrLeaseLost and changes nothing.
func (s *Store) Apply(ctx context.Context, id int64, owner string, update func(cluster.View) (cluster.Change, error)) (cluster.View, error) {
	var after cluster.View
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := checkLease(ctx, tx, id, owner); err != nil {
			return err
		}
		before, err := s.lock(ctx, tx, id, "")
		if err != nil {
			return err
		}
		c, err := update(before.Clone()) // update may change what it is given; before stays as loaded
		if err != nil {
			return err
		}
		after, err = s.save(ctx, tx, before, c)
		return err
	})
	return after, err
}

// Remove deletes the claimed cluster with the events remove (cluster.Remove) returns for its
// current view, provided owner still holds the lease; an error from remove deletes nothing.
func (s *Store) Remove(ctx context.Context, id int64, owner string, remove func(cluster.View) ([]cluster.Event, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := checkLease(ctx, tx, id, owner); err != nil {
			return err
		}
		v, err := s.lock(ctx, tx, id, "")
		if err != nil {
			return err
		}
		evs, err := remove(v)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM clusters WHERE id = $1`, id); err != nil {
			return err
		}
		return publish(ctx, tx, evs)
	})
}

func checkLease(ctx context.Context, tx pgx.Tx, id int64, owner string) error {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT lease_owner = $2 AND lease_expires > now() FROM clusters WHERE id = $1 FOR UPDATE`, id, owner).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !ok) {
		return cluster.ErrLeaseLost
	}
	return err
}
