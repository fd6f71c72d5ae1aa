package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// RecordHeartbeat counts the heartbeat and, when it is the node's newest, takes its addresses,
// interval, version and device classes (classes it no longer lists are dropped).
func (s *Store) RecordHeartbeat(ctx context.Context, tx pgx.Tx, hb inventory.Heartbeat) error {
	var newest bool
	// In DO UPDATE, n.* is the row before the update: every CASE compares against the old
	// heartbeat time.
	err := tx.QueryRow(ctx, `
		INSERT INTO storage_nodes AS n (name, first_seen, heartbeat_at, heartbeat_interval_seconds, heartbeats, addresses, agent_version)
		VALUES ($1, $2, $2, $3, 1, $4, $5)
		ON CONFLICT (name) DO UPDATE SET
			heartbeats = n.heartbeats + 1,
			first_seen = LEAST(n.first_seen, $2),
			heartbeat_at = GREATEST(n.heartbeat_at, $2),
			heartbeat_interval_seconds = CASE WHEN n.heartbeat_at IS NULL OR n.heartbeat_at <= $2 THEN $3 ELSE n.heartbeat_interval_seconds END,
			addresses = CASE WHEN n.heartbeat_at IS NULL OR n.heartbeat_at <= $2 THEN $4 ELSE n.addresses END,
			agent_version = CASE WHEN n.heartbeat_at IS NULL OR n.heartbeat_at <= $2 THEN $5 ELSE n.agent_version END
		RETURNING heartbeat_at = $2::timestamptz`,
		hb.Node, hb.At, hb.IntervalSeconds, nonNil(hb.Addresses), hb.AgentVersion).Scan(&newest)
	if err != nil {
		return fmt.Errorf("record heartbeat: %w", err)
	}
	if !newest {
		return nil
	}
	names := make([]string, len(hb.Classes))
	for i, c := range hb.Classes {
		names[i] = c.Name
	}
	if _, err := tx.Exec(ctx, `DELETE FROM device_classes WHERE node = $1 AND observed_at <= $2 AND NOT (name = ANY($3))`,
		hb.Node, hb.At, names); err != nil {
		return fmt.Errorf("record heartbeat: %w", err)
	}
	return upsertClasses(ctx, tx, hb.Node, hb.Classes, hb.At)
}

// RecordCapacity takes a device class's space unless a newer report is already recorded. A
// node not heard of yet is recorded without a heartbeat.
func (s *Store) RecordCapacity(ctx context.Context, tx pgx.Tx, node string, class inventory.DeviceClass, at time.Time) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO storage_nodes AS n (name, first_seen) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET first_seen = LEAST(n.first_seen, $2)`, node, at); err != nil {
		return fmt.Errorf("record capacity: %w", err)
	}
	return upsertClasses(ctx, tx, node, []inventory.DeviceClass{class}, at)
}

// upsertClasses writes classes observed at `at`, each only over an older observation.
func upsertClasses(ctx context.Context, tx pgx.Tx, node string, classes []inventory.DeviceClass, at time.Time) error {
	if len(classes) == 0 {
		return nil
	}
	var (
		names, groups = make([]string, len(classes)), make([]string, len(classes))
		defaults      = make([]bool, len(classes))
		sizes, frees  = make([]int64, len(classes)), make([]int64, len(classes))
		volumes       = make([]int32, len(classes))
	)
	for i, c := range classes {
		names[i], groups[i], defaults[i], sizes[i], frees[i], volumes[i] = c.Name, c.VolumeGroup, c.Default, c.SizeBytes, c.FreeBytes, int32(c.Volumes)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO device_classes AS d (node, name, volume_group, is_default, size_bytes, free_bytes, volumes, observed_at)
		SELECT $1, c.name, c.volume_group, c.is_default, c.size_bytes, c.free_bytes, c.volumes, $8
		FROM unnest($2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::bigint[], $7::integer[])
			AS c (name, volume_group, is_default, size_bytes, free_bytes, volumes)
		ON CONFLICT (node, name) DO UPDATE SET
			volume_group = EXCLUDED.volume_group, is_default = EXCLUDED.is_default, size_bytes = EXCLUDED.size_bytes,
			free_bytes = EXCLUDED.free_bytes, volumes = EXCLUDED.volumes, observed_at = EXCLUDED.observed_at
		WHERE d.observed_at <= EXCLUDED.observed_at`,
		node, names, groups, defaults, sizes, frees, volumes, at)
	if err != nil {
		return fmt.Errorf("record device classes: %w", err)
	}
	return nil
}

// RecordMachine takes the machine's state unless a newer one is recorded; its first-seen time
// is the earliest of all its events either way.
func (s *Store) RecordMachine(ctx context.Context, tx pgx.Tx, m inventory.Machine) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO machines AS m (name, cluster, pool, role, state, addresses, provider, provider_id, provider_status, message, first_seen, changed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
		ON CONFLICT (name) DO UPDATE SET
			cluster = EXCLUDED.cluster, pool = EXCLUDED.pool, role = EXCLUDED.role, state = EXCLUDED.state,
			addresses = EXCLUDED.addresses, provider = EXCLUDED.provider, provider_id = EXCLUDED.provider_id,
			provider_status = EXCLUDED.provider_status, message = EXCLUDED.message, changed_at = EXCLUDED.changed_at
		WHERE m.changed_at <= EXCLUDED.changed_at`,
		m.Name, m.Cluster, m.Pool, int16(m.Role), int16(m.State), nonNil(m.Addresses), m.Provider, m.ProviderID,
		m.ProviderStatus, m.Message, m.ChangedAt)
	if err == nil {
		_, err = tx.Exec(ctx, `UPDATE machines SET first_seen = $2 WHERE name = $1 AND first_seen > $2`, m.Name, m.ChangedAt)
	}
	if err != nil {
		return fmt.Errorf("record machine: %w", err)
	}
	return nil
}

// ReleaseMachines marks a deleted cluster's machines released (unless they changed since).
func (s *Store) ReleaseMachines(ctx context.Context, tx pgx.Tx, cluster string, at time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE machines SET state = $3, changed_at = $2 WHERE cluster = $1 AND changed_at <= $2`,
		cluster, at, int16(eventsv1.MachineState_MACHINE_STATE_RELEASED))
	if err != nil {
		return fmt.Errorf("release machines: %w", err)
	}
	return nil
}

// StorageNodes lists every storage node with its device classes, by name.
func (s *Store) StorageNodes(ctx context.Context) ([]inventory.StorageNode, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT name, first_seen, heartbeat_at, heartbeat_interval_seconds, heartbeats, addresses, agent_version
		FROM storage_nodes ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list storage nodes: %w", err)
	}
	defer rows.Close()
	var nodes []inventory.StorageNode
	index := map[string]int{}
	for rows.Next() {
		var (
			n  inventory.StorageNode
			hb *time.Time
		)
		if err := rows.Scan(&n.Name, &n.FirstSeen, &hb, &n.IntervalSeconds, &n.Heartbeats, &n.Addresses, &n.AgentVersion); err != nil {
			return nil, fmt.Errorf("list storage nodes: %w", err)
		}
		if hb != nil {
			n.HeartbeatAt = *hb
		}
		index[n.Name] = len(nodes)
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list storage nodes: %w", err)
	}
	rows, err = s.pool.Query(ctx, `
		SELECT node, name, volume_group, is_default, size_bytes, free_bytes, volumes FROM device_classes ORDER BY node, name`)
	if err != nil {
		return nil, fmt.Errorf("list device classes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			node string
			c    inventory.DeviceClass
		)
		if err := rows.Scan(&node, &c.Name, &c.VolumeGroup, &c.Default, &c.SizeBytes, &c.FreeBytes, &c.Volumes); err != nil {
			return nil, fmt.Errorf("list device classes: %w", err)
		}
		if i, ok := index[node]; ok {
			nodes[i].Classes = append(nodes[i].Classes, c)
		}
	}
	return nodes, rows.Err()
}

// Machines lists the machines not released, by name.
func (s *Store) Machines(ctx context.Context) ([]inventory.Machine, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT name, cluster, pool, role, state, addresses, provider, provider_id, provider_status, message, first_seen, changed_at
		FROM machines WHERE state <> $1 ORDER BY name`, int16(eventsv1.MachineState_MACHINE_STATE_RELEASED))
	if err != nil {
		return nil, fmt.Errorf("list machines: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (inventory.Machine, error) {
		var (
			m           inventory.Machine
			role, state int16
		)
		err := row.Scan(&m.Name, &m.Cluster, &m.Pool, &role, &state, &m.Addresses, &m.Provider, &m.ProviderID,
			&m.ProviderStatus, &m.Message, &m.FirstSeen, &m.ChangedAt)
		m.Role, m.State = eventsv1.MachineRole(role), eventsv1.MachineState(state)
		return m, err
	})
}

// Forget deletes storage nodes whose newest heartbeat (or first event, without one) is older
// than before, and machines released before it.
func (s *Store) Forget(ctx context.Context, before time.Time) (int64, error) {
	a, err := s.pool.Exec(ctx, `DELETE FROM storage_nodes WHERE COALESCE(heartbeat_at, first_seen) < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("forget storage nodes: %w", err)
	}
	b, err := s.pool.Exec(ctx, `DELETE FROM machines WHERE state = $2 AND changed_at < $1`,
		before, int16(eventsv1.MachineState_MACHINE_STATE_RELEASED))
	if err != nil {
		return 0, fmt.Errorf("forget machines: %w", err)
	}
	return a.RowsAffected() + b.RowsAffected(), nil
}

// nonNil is s, or an empty slice for the NOT NULL array columns.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
