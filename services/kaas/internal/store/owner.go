package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// lockOwner takes the lock of one owner's quota until tx ends. Every write that a quota
// admits (Create, UpdateOwned) holds it from its count to its commit, so a second request
// of the same owner counts only after the first is committed or gone: two creates at the
// limit cannot both pass. An advisory lock rather than row locks, because what must be
// serialised includes rows that do not exist yet (the clusters being created). The key is
// namespaced, as other services' advisory locks share the database.
func lockOwner(ctx context.Context, tx pgx.Tx, ownerID string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('kaas.owner:' || $1, 0))`, ownerID)
	return err
}

// usage counts what ownerID's clusters hold, leaving out the cluster except (0: none), as
// cluster.Machines counts: clusters not being deleted, and the counts of their pools not
// being deleted. Read under lockOwner, it cannot change before tx commits but by shrinking.
func usage(ctx context.Context, tx pgx.Tx, ownerID string, except int64) (cluster.Usage, error) {
	var u cluster.Usage
	err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum((SELECT coalesce(sum(p.count), 0) FROM pools p
			WHERE p.cluster_id = c.id AND NOT p.deleting)), 0)
		FROM clusters c WHERE c.owner_id = $1 AND NOT c.deleting AND c.id <> $2`, ownerID, except).Scan(&u.Clusters, &u.Machines)
	return u, err
}

// UpdateOwned is Update for changes a quota admits: with the cluster locked it also takes
// its owner's lock (always in this order; Create takes only the owner's) and passes update
// what the owner's other clusters hold.
func (s *Store) UpdateOwned(ctx context.Context, name string, update func(cluster.View, cluster.Usage) (cluster.Change, error)) (cluster.View, error) {
	return s.update(ctx, name, func(tx pgx.Tx, before cluster.View) (cluster.Change, error) {
		if err := lockOwner(ctx, tx, before.Owner.ID); err != nil {
			return cluster.Change{}, err
		}
		others, err := usage(ctx, tx, before.Owner.ID, before.ID)
		if err != nil {
			return cluster.Change{}, err
		}
		return update(before.Clone(), others)
	})
}
