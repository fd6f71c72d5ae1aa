package store

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	platformevents "github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/events"
)

// maxStatusMessage bounds status messages: they quote provider errors.
const maxStatusMessage = 2048

// Create records a new cluster, its pools and sealed key material, and wakes the reconciler.
func (s *Store) Create(ctx context.Context, c cluster.Cluster, pools []cluster.Pool, secrets []byte) (cluster.View, error) {
	c.UID = uuid.NewString()
	v := cluster.View{Cluster: c, Pools: pools}
	v.Status, v.StatusMessage = cluster.Derive(v, s.failAfter)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO clusters (uid, name, provider, version, target_version, status, status_message, secrets)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, created_at, updated_at`,
			c.UID, c.Name, c.Provider, c.Version, c.TargetVersion, v.Status, v.StatusMessage, secrets).
			Scan(&v.ID, &v.CreatedAt, &v.UpdatedAt)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return cluster.ClusterExists(c.Name)
		}
		if err != nil {
			return err
		}
		for _, p := range pools {
			if err := insertPool(ctx, tx, v.ID, p); err != nil {
				return err
			}
		}
		if _, err := (platformevents.Outbox{}).Add(ctx, tx, platformevents.Event{Payload: events.ClusterStatus(v.Cluster, cluster.StatusUnspecified, false)}); err != nil {
			return err
		}
		return wake(ctx, tx)
	})
	return v, err
}

// Update runs change on the cluster's view under its row lock and saves the result (see
// cluster.Store). It bumps the generation, so a reconciler pass already running runs again.
func (s *Store) Update(ctx context.Context, name string, change func(*cluster.View) error) (cluster.View, error) {
	var after cluster.View
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		before, err := s.lock(ctx, tx, 0, name)
		if err != nil {
			return err
		}
		after = clone(before)
		if err := change(&after); err != nil {
			return err
		}
		if err := s.save(ctx, tx, before, &after); err != nil {
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

// clone copies a view deeply enough that changing the copy leaves the original as it was.
func clone(v cluster.View) cluster.View {
	out := v
	out.Pools = make([]cluster.Pool, len(v.Pools))
	for i, p := range v.Pools {
		p.Labels = slices.Clone(p.Labels)
		out.Pools[i] = p
	}
	out.Machines = make([]cluster.Machine, len(v.Machines))
	for i, m := range v.Machines {
		m.Addresses = slices.Clone(m.Addresses)
		m.ProviderState = slices.Clone(m.ProviderState)
		out.Machines[i] = m
	}
	return out
}

// save writes the difference between before and after: the cluster's columns, pools added,
// changed or gone, machines added, changed or gone (each change with its event), then the
// derived status (with its event when it changed).
func (s *Store) save(ctx context.Context, tx pgx.Tx, before cluster.View, after *cluster.View) error {
	outbox := platformevents.Outbox{}
	add := func(payload platformevents.Event) error {
		_, err := outbox.Add(ctx, tx, payload)
		return err
	}
	instanceType := func(pool string) string {
		if p, ok := after.Pool(pool); ok {
			return p.InstanceType
		}
		if p, ok := before.Pool(pool); ok {
			return p.InstanceType
		}
		return ""
	}
	// Machines: gone, new, changed.
	for _, old := range before.Machines {
		if slices.ContainsFunc(after.Machines, func(m cluster.Machine) bool { return m.ID == old.ID }) {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM machines WHERE id = $1`, old.ID); err != nil {
			return err
		}
		gone := old
		gone.State = cluster.MachineReleased
		if err := add(platformevents.Event{Payload: events.MachineState(after.Cluster, gone, old.State, instanceType(old.Pool))}); err != nil {
			return err
		}
	}
	for i := range after.Machines {
		m := &after.Machines[i]
		m.Message = input.Truncate(m.Message, maxStatusMessage)
		if m.ID == 0 {
			err := tx.QueryRow(ctx, `INSERT INTO machines (cluster_id, pool, name, ordinal, role, state, version, provider_id,
				provider_state, hostname, addresses, provider_status, message, release)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id, created_at`,
				after.ID, m.Pool, m.Name, m.Ordinal, m.Role, m.State, m.Version, m.ProviderID, m.ProviderState, m.Hostname,
				nonNil(m.Addresses), m.ProviderStatus, m.Message, m.Release).Scan(&m.ID, &m.CreatedAt)
			if err != nil {
				return err
			}
			if err := add(platformevents.Event{Payload: events.MachineState(after.Cluster, *m, 0, instanceType(m.Pool))}); err != nil {
				return err
			}
			continue
		}
		j := slices.IndexFunc(before.Machines, func(o cluster.Machine) bool { return o.ID == m.ID })
		old := before.Machines[j]
		if machineEqual(old, *m) {
			continue
		}
		_, err := tx.Exec(ctx, `UPDATE machines SET state = $2, version = $3, provider_id = $4, provider_state = $5, hostname = $6,
			addresses = $7, provider_status = $8, message = $9, release = $10, updated_at = now() WHERE id = $1`,
			m.ID, m.State, m.Version, m.ProviderID, m.ProviderState, m.Hostname, nonNil(m.Addresses), m.ProviderStatus, m.Message, m.Release)
		if err != nil {
			return err
		}
		if events.MachineChanged(old, *m) {
			if err := add(platformevents.Event{Payload: events.MachineState(after.Cluster, *m, old.State, instanceType(m.Pool))}); err != nil {
				return err
			}
		}
	}
	if err := savePools(ctx, tx, after.ID, before.Pools, after.Pools); err != nil {
		return err
	}
	cluster.Settle(after)
	prev := before.Status
	after.Status, after.StatusMessage = cluster.Derive(*after, s.failAfter)
	after.StatusMessage = input.Truncate(after.StatusMessage, maxStatusMessage)
	after.LastError = input.Truncate(after.LastError, maxStatusMessage)
	err := tx.QueryRow(ctx, `UPDATE clusters SET version = $2, target_version = $3, status = $4, status_message = $5, deleting = $6,
		ready_once = $7, endpoint = $8, attempts = $9, last_error = $10, updated_at = now() WHERE id = $1 RETURNING updated_at`,
		after.ID, after.Version, after.TargetVersion, after.Status, after.StatusMessage, after.Deleting, after.ReadyOnce,
		after.Endpoint, after.Attempts, after.LastError).Scan(&after.UpdatedAt)
	if err != nil {
		return err
	}
	if after.Status != prev {
		return add(platformevents.Event{Payload: events.ClusterStatus(after.Cluster, prev, false)})
	}
	return nil
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
	if p.NextOrdinal == 0 {
		p.NextOrdinal = 1
	}
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
