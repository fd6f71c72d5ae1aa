package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/events"
)

// Create writes a new cluster, its pools, sealed key material and events as c (cluster.New)
// has them, and wakes the reconciler — once admit, given what the cluster's owner's clusters
// hold, counted under the owner's lock (see lockOwner), has returned nil.
func (s *Store) Create(ctx context.Context, c cluster.Change, secrets []byte, admit func(cluster.Usage) error) (cluster.View, error) {
	v := c.View
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if admit != nil {
			if err := lockOwner(ctx, tx, v.Owner.ID); err != nil {
				return err
			}
			held, err := usage(ctx, tx, v.Owner.ID, 0)
			if err != nil {
				return err
			}
			if err := admit(held); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `INSERT INTO clusters (uid, name, owner_id, owner_name, provider, version, target_version, status,
			status_message, secrets) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id, created_at, updated_at`,
			v.UID, v.Name, v.Owner.ID, v.Owner.Name, v.Provider, v.Version, v.TargetVersion, v.Status, v.StatusMessage, secrets).
			Scan(&v.ID, &v.CreatedAt, &v.UpdatedAt)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return cluster.ClusterExists(v.Name)
		}
		if err != nil {
			return err
		}
		for _, p := range v.Pools {
			if err := insertPool(ctx, tx, v.ID, p); err != nil {
				return err
			}
		}
		if err := publish(ctx, tx, c.Events); err != nil {
			return err
		}
		return wake(ctx, tx)
	})
	return v, err
}

// Update locks the cluster, passes it to update and writes the change it returns (see
// cluster.Store). It bumps the generation, so a reconciler pass already running runs again.
func (s *Store) Update(ctx context.Context, name string, update func(cluster.View) (cluster.Change, error)) (cluster.View, error) {
	return s.update(ctx, name, func(_ pgx.Tx, before cluster.View) (cluster.Change, error) {
		return update(before.Clone()) // update may change what it is given; before stays as loaded
	})
}

// update is Update with the transaction, for what must be read in it besides the cluster.
func (s *Store) update(ctx context.Context, name string, update func(pgx.Tx, cluster.View) (cluster.Change, error)) (cluster.View, error) {
	var after cluster.View
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		before, err := s.lock(ctx, tx, 0, name)
		if err != nil {
			return err
		}
		c, err := update(tx, before)
		if err != nil {
			return err
		}
		if after, err = s.save(ctx, tx, before, c); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE clusters SET generation = generation + 1, next_reconcile_at = now() WHERE id = $1`, after.ID); err != nil {
			return err
		}
		return wake(ctx, tx)
	})
	return after, err
}

// wake tells every reconciler that a cluster needs work; delivered at commit.
func wake(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, WakeChannel)
	return err
}

// publish adds evs to the outbox, in order.
func publish(ctx context.Context, tx pgx.Tx, evs []cluster.Event) error {
	for _, e := range evs {
		payload, err := events.Payload(ctx, e)
		if err != nil {
			return err
		}
		if _, err := (platformevents.Outbox{}).Add(ctx, tx, platformevents.Event{Payload: payload}); err != nil {
			return err
		}
		if sc, ok := payload.(*eventsv1.ClusterStatusChanged); ok && !sc.GetDeleted() {
			if err := recordStatus(ctx, tx, sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// historyKept is how many status changes a cluster's timeline keeps.
const historyKept = 100

// recordStatus adds a status change to its cluster's timeline (the cluster's row is written
// in the same transaction) and drops what is older than the newest historyKept.
func recordStatus(ctx context.Context, tx pgx.Tx, e *eventsv1.ClusterStatusChanged) error {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO status_history (cluster_id, status, message, actor_username)
		SELECT id, $2, $3, $4 FROM clusters WHERE name = $1 RETURNING cluster_id`,
		e.GetCluster(), int16(e.GetStatus()), e.GetStatusMessage(), e.GetActor().GetUsername()).Scan(&id)
	if err != nil {
		return fmt.Errorf("store: record the status of cluster %q: %w", e.GetCluster(), err)
	}
	_, err = tx.Exec(ctx, `DELETE FROM status_history WHERE cluster_id = $1 AND id < (
		SELECT min(id) FROM (SELECT id FROM status_history WHERE cluster_id = $1 ORDER BY id DESC LIMIT $2) newest)`, id, historyKept)
	return err
}

// save writes c over before, which was loaded under the lock: the cluster's columns, pools
// added, changed or gone, machines added, changed or gone, and c's events. It returns c's
// view with what the database assigned (machine ids, times).
func (s *Store) save(ctx context.Context, tx pgx.Tx, before cluster.View, c cluster.Change) (cluster.View, error) {
	after := c.View
	if after.ID != before.ID {
		return after, fmt.Errorf("store: a change of cluster #%d cannot be saved over #%d", after.ID, before.ID)
	}
	after.Machines = slices.Clone(after.Machines)
	for _, old := range before.Machines {
		if slices.ContainsFunc(after.Machines, func(m cluster.Machine) bool { return m.ID == old.ID }) {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM machines WHERE id = $1`, old.ID); err != nil {
			return after, err
		}
	}
	for i := range after.Machines {
		m := &after.Machines[i]
		if m.ID == 0 {
			err := tx.QueryRow(ctx, `INSERT INTO machines (cluster_id, pool, name, ordinal, role, state, version, provider_id,
				provider_state, hostname, addresses, provider_status, message, release)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id, created_at`,
				after.ID, m.Pool, m.Name, m.Ordinal, m.Role, m.State, m.Version, m.ProviderID, m.ProviderState, m.Hostname,
				nonNil(m.Addresses), m.ProviderStatus, m.Message, m.Release).Scan(&m.ID, &m.CreatedAt)
			if err != nil {
				return after, err
			}
			continue
		}
		j := slices.IndexFunc(before.Machines, func(o cluster.Machine) bool { return o.ID == m.ID })
		if j < 0 {
			return after, fmt.Errorf("store: machine #%d is not one of cluster %q's", m.ID, after.Name)
		}
		if machineEqual(before.Machines[j], *m) {
			continue
		}
		_, err := tx.Exec(ctx, `UPDATE machines SET state = $2, version = $3, provider_id = $4, provider_state = $5, hostname = $6,
			addresses = $7, provider_status = $8, message = $9, release = $10, updated_at = now() WHERE id = $1`,
			m.ID, m.State, m.Version, m.ProviderID, m.ProviderState, m.Hostname, nonNil(m.Addresses), m.ProviderStatus, m.Message, m.Release)
		if err != nil {
			return after, err
		}
	}
	if err := savePools(ctx, tx, after.ID, before.Pools, after.Pools); err != nil {
		return after, err
	}
	err := tx.QueryRow(ctx, `UPDATE clusters SET version = $2, target_version = $3, status = $4, status_message = $5, deleting = $6,
		ready_once = $7, endpoint = $8, attempts = $9, last_error = $10, updated_at = now() WHERE id = $1 RETURNING updated_at`,
		after.ID, after.Version, after.TargetVersion, after.Status, after.StatusMessage, after.Deleting, after.ReadyOnce,
		after.Endpoint, after.Attempts, after.LastError).Scan(&after.UpdatedAt)
	if err != nil {
		return after, err
	}
	return after, publish(ctx, tx, c.Events)
}

func savePools(ctx context.Context, tx pgx.Tx, clusterID int64, before, after []cluster.Pool) error {
	for _, old := range before {
		if !slices.ContainsFunc(after, func(p cluster.Pool) bool { return p.Name == old.Name }) {
			if _, err := tx.Exec(ctx, `DELETE FROM pools WHERE cluster_id = $1 AND name = $2`, clusterID, old.Name); err != nil {
				return err
			}
		}
	}
	for _, p := range after {
		i := slices.IndexFunc(before, func(o cluster.Pool) bool { return o.Name == p.Name })
		if i < 0 {
			if err := insertPool(ctx, tx, clusterID, p); err != nil {
				return err
			}
			continue
		}
		old := before[i]
		if old.Count == p.Count && old.Deleting == p.Deleting && old.NextOrdinal == p.NextOrdinal {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE pools SET count = $3, deleting = $4, next_ordinal = $5 WHERE cluster_id = $1 AND name = $2`,
			clusterID, p.Name, p.Count, p.Deleting, p.NextOrdinal); err != nil {
			return err
		}
	}
	return nil
}

func insertPool(ctx context.Context, tx pgx.Tx, clusterID int64, p cluster.Pool) error {
	_, err := tx.Exec(ctx, `INSERT INTO pools (cluster_id, name, role, instance_type, count, labels, deleting, next_ordinal)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, clusterID, p.Name, p.Role, p.InstanceType, p.Count, labelsJSON(p.Labels), p.Deleting, p.NextOrdinal)
	return err
}

func machineEqual(a, b cluster.Machine) bool {
	return a.State == b.State && a.Version == b.Version && a.ProviderID == b.ProviderID && slices.Equal(a.ProviderState, b.ProviderState) &&
		a.Hostname == b.Hostname && slices.Equal(a.Addresses, b.Addresses) && a.ProviderStatus == b.ProviderStatus &&
		a.Message == b.Message && a.Release == b.Release
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

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

// lock loads the cluster (by name when id is 0) under a row lock with its pools and machines.
func (s *Store) lock(ctx context.Context, tx pgx.Tx, id int64, name string) (cluster.View, error) {
	var row pgx.Row
	if id != 0 {
		row = tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE id = $1 FOR UPDATE`, id)
	} else {
		row = tx.QueryRow(ctx, `SELECT `+clusterColumns+` FROM clusters WHERE name = $1 FOR UPDATE`, name)
	}
	c, err := scanCluster(row)
	if errors.Is(err, pgx.ErrNoRows) {
		if name == "" {
			name = fmt.Sprintf("#%d", id)
		}
		return cluster.View{}, cluster.NotFound(name)
	}
	if err != nil {
		return cluster.View{}, err
	}
	return s.loadView(ctx, tx, c)
}
