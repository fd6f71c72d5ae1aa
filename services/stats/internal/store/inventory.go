package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// UpdateNode locks storage node name for tx (an advisory lock: the node may not exist yet),
// reads it with its device classes, passes it to change and writes exactly the node change
// returns: its row, and its classes (those it lacks deleted). inventory.ApplyHeartbeat and
// ApplyCapacity decide what that is.
func (s *Store) UpdateNode(ctx context.Context, tx pgx.Tx, name string, change func(before inventory.StorageNode, found bool) inventory.StorageNode) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('stats/node/' || $1, 0))`, name); err != nil {
		return fmt.Errorf("update node %s: %w", name, err)
	}
	before, found, err := readNode(ctx, tx, name)
	if err != nil {
		return fmt.Errorf("update node %s: %w", name, err)
	}
	if err := writeNode(ctx, tx, change(before, found)); err != nil {
		return fmt.Errorf("update node %s: %w", name, err)
	}
	return nil
}

func readNode(ctx context.Context, tx pgx.Tx, name string) (inventory.StorageNode, bool, error) {
	n := inventory.StorageNode{Name: name}
	var hb *time.Time
	err := tx.QueryRow(ctx, `SELECT first_seen, heartbeat_at, heartbeat_interval_seconds, heartbeats, addresses, agent_version
		FROM storage_nodes WHERE name = $1 FOR UPDATE`, name).Scan(&n.FirstSeen, &hb, &n.IntervalSeconds, &n.Heartbeats, &n.Addresses, &n.AgentVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return inventory.StorageNode{}, false, nil
	}
	if err != nil {
		return n, false, err
	}
	if hb != nil {
		n.HeartbeatAt = *hb
	}
	rows, err := tx.Query(ctx, `SELECT `+classColumns+` FROM device_classes WHERE node = $1 ORDER BY name`, name)
	if err != nil {
		return n, false, err
	}
	n.Classes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (inventory.DeviceClass, error) {
		_, c, err := scanClass(row)
		return c, err
	})
	return n, true, err
}

// writeNode writes n over its row and device classes.
func writeNode(ctx context.Context, tx pgx.Tx, n inventory.StorageNode) error {
	var hb *time.Time
	if !n.HeartbeatAt.IsZero() {
		hb = &n.HeartbeatAt
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO storage_nodes (name, first_seen, heartbeat_at, heartbeat_interval_seconds, heartbeats, addresses, agent_version)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (name) DO UPDATE SET
			first_seen = EXCLUDED.first_seen, heartbeat_at = EXCLUDED.heartbeat_at,
			heartbeat_interval_seconds = EXCLUDED.heartbeat_interval_seconds, heartbeats = EXCLUDED.heartbeats,
			addresses = EXCLUDED.addresses, agent_version = EXCLUDED.agent_version`,
		n.Name, n.FirstSeen, hb, n.IntervalSeconds, n.Heartbeats, nonNil(n.Addresses), n.AgentVersion)
	if err != nil {
		return err
	}
	var (
		k             = len(n.Classes)
		names, groups = make([]string, k), make([]string, k)
		defaults      = make([]bool, k)
		sizes, frees  = make([]int64, k), make([]int64, k)
		volumes       = make([]int32, k)
		observed      = make([]time.Time, k)
	)
	for i, c := range n.Classes {
		names[i], groups[i], defaults[i], sizes[i], frees[i], volumes[i], observed[i] =
			c.Name, c.VolumeGroup, c.Default, c.SizeBytes, c.FreeBytes, int32(c.Volumes), c.ObservedAt
	}
	if _, err := tx.Exec(ctx, `DELETE FROM device_classes WHERE node = $1 AND NOT (name = ANY($2))`, n.Name, names); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO device_classes (node, name, volume_group, is_default, size_bytes, free_bytes, volumes, observed_at)
		SELECT $1, c.* FROM unnest($2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::bigint[], $7::integer[], $8::timestamptz[])
			AS c (name, volume_group, is_default, size_bytes, free_bytes, volumes, observed_at)
		ON CONFLICT (node, name) DO UPDATE SET
			volume_group = EXCLUDED.volume_group, is_default = EXCLUDED.is_default, size_bytes = EXCLUDED.size_bytes,
			free_bytes = EXCLUDED.free_bytes, volumes = EXCLUDED.volumes, observed_at = EXCLUDED.observed_at`,
		n.Name, names, groups, defaults, sizes, frees, volumes, observed)
	return err
}

// UpdateMachine locks machine name for tx, reads it (released or not), passes it to change
// and writes exactly the machine change returns; inventory.ApplyMachine decides it.
func (s *Store) UpdateMachine(ctx context.Context, tx pgx.Tx, name string, change func(before inventory.Machine, found bool) inventory.Machine) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('stats/machine/' || $1, 0))`, name); err != nil {
		return fmt.Errorf("update machine %s: %w", name, err)
	}
	ms, err := readMachines(ctx, tx, `WHERE name = $1 FOR UPDATE`, name)
	if err != nil {
		return fmt.Errorf("update machine %s: %w", name, err)
	}
	var before inventory.Machine
	if len(ms) == 1 {
		before = ms[0]
	}
	if err := writeMachine(ctx, tx, change(before, len(ms) == 1)); err != nil {
		return fmt.Errorf("update machine %s: %w", name, err)
	}
	return nil
}

// UpdateClusterMachines locks and reads cluster's machines, released ones included, passes
// them to change and writes exactly the machines change returns; inventory.Release decides
// them.
func (s *Store) UpdateClusterMachines(ctx context.Context, tx pgx.Tx, cluster string, change func(before []inventory.Machine) []inventory.Machine) error {
	before, err := readMachines(ctx, tx, `WHERE cluster = $1 ORDER BY name FOR UPDATE`, cluster)
	if err != nil {
		return fmt.Errorf("update the machines of cluster %s: %w", cluster, err)
	}
	for _, m := range change(before) {
		if err := writeMachine(ctx, tx, m); err != nil {
			return fmt.Errorf("update the machines of cluster %s: %w", cluster, err)
		}
	}
	return nil
}

const machineColumns = `name, cluster, pool, role, state, addresses, provider, provider_id, provider_status, message, first_seen, changed_at`

// machineQuerier is a pool or a transaction.
type machineQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readMachines reads the machines a WHERE (and ORDER, FOR) clause selects.
func readMachines(ctx context.Context, db machineQuerier, where string, args ...any) ([]inventory.Machine, error) {
	rows, err := db.Query(ctx, `SELECT `+machineColumns+` FROM machines `+where, args...)
	if err != nil {
		return nil, err
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

func writeMachine(ctx context.Context, tx pgx.Tx, m inventory.Machine) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO machines (`+machineColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (name) DO UPDATE SET
			cluster = EXCLUDED.cluster, pool = EXCLUDED.pool, role = EXCLUDED.role, state = EXCLUDED.state,
			addresses = EXCLUDED.addresses, provider = EXCLUDED.provider, provider_id = EXCLUDED.provider_id,
			provider_status = EXCLUDED.provider_status, message = EXCLUDED.message, first_seen = EXCLUDED.first_seen,
			changed_at = EXCLUDED.changed_at`,
		m.Name, m.Cluster, m.Pool, int16(m.Role), int16(m.State), nonNil(m.Addresses), m.Provider, m.ProviderID,
		m.ProviderStatus, m.Message, m.FirstSeen, m.ChangedAt)
	return err
}

const classColumns = `node, name, volume_group, is_default, size_bytes, free_bytes, volumes, observed_at`

func scanClass(row pgx.CollectableRow) (string, inventory.DeviceClass, error) {
	var (
		node string
		c    inventory.DeviceClass
	)
	err := row.Scan(&node, &c.Name, &c.VolumeGroup, &c.Default, &c.SizeBytes, &c.FreeBytes, &c.Volumes, &c.ObservedAt)
	return node, c, err
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
	rows, err = s.pool.Query(ctx, `SELECT `+classColumns+` FROM device_classes ORDER BY node, name`)
	if err != nil {
		return nil, fmt.Errorf("list device classes: %w", err)
	}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		node, c, err := scanClass(row)
		if i, ok := index[node]; ok && err == nil {
			nodes[i].Classes = append(nodes[i].Classes, c)
		}
		return struct{}{}, err
	})
	if err != nil {
		return nil, fmt.Errorf("list device classes: %w", err)
	}
	return nodes, nil
}

// Machines lists the machines not released, by name.
func (s *Store) Machines(ctx context.Context) ([]inventory.Machine, error) {
	ms, err := readMachines(ctx, s.pool, `WHERE state <> $1 ORDER BY name`, int16(eventsv1.MachineState_MACHINE_STATE_RELEASED))
	if err != nil {
		return nil, fmt.Errorf("list machines: %w", err)
	}
	return ms, nil
}

// Forget deletes, in one transaction holding their rows, the storage nodes and machines f
// says are forgotten (inventory.Forgetting decides; nodes are passed without their device
// classes).
func (s *Store) Forget(ctx context.Context, f inventory.Forgetting) (int64, error) {
	var n int64
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name, first_seen, heartbeat_at FROM storage_nodes ORDER BY name FOR UPDATE`)
		if err != nil {
			return err
		}
		var nodes []string
		_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
			var (
				sn inventory.StorageNode
				hb *time.Time
			)
			err := row.Scan(&sn.Name, &sn.FirstSeen, &hb)
			if hb != nil {
				sn.HeartbeatAt = *hb
			}
			if err == nil && f.Node(sn) {
				nodes = append(nodes, sn.Name)
			}
			return struct{}{}, err
		})
		if err != nil {
			return err
		}
		a, err := tx.Exec(ctx, `DELETE FROM storage_nodes WHERE name = ANY($1)`, nodes)
		if err != nil {
			return err
		}
		ms, err := readMachines(ctx, tx, `ORDER BY name FOR UPDATE`)
		if err != nil {
			return err
		}
		var machines []string
		for _, m := range ms {
			if f.Machine(m) {
				machines = append(machines, m.Name)
			}
		}
		b, err := tx.Exec(ctx, `DELETE FROM machines WHERE name = ANY($1)`, machines)
		n = a.RowsAffected() + b.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("forget storage nodes and machines: %w", err)
	}
	return n, nil
}

// nonNil is s, or an empty slice for the NOT NULL array columns.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
