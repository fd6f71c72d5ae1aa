package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pg"

	lvmdevents "github.com/plinth-dev/plinth/services/lvmd-agent/internal/events"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

var _ volume.Recorder = VolumeRecord{}

// VolumeRecord is one node's record of its volumes and capacity in Postgres: the
// volume.Recorder the agent's volume service writes through (UpdateVolumes, with its events).
type VolumeRecord struct {
	store *Store
	node  string
}

// VolumeRecord returns the record of node's volumes.
func (s *Store) VolumeRecord(node string) VolumeRecord { return VolumeRecord{store: s, node: node} }

// Update passes the node's record of class to change and writes what it returns (see
// UpdateVolumes).
func (r VolumeRecord) Update(ctx context.Context, class string, change func(before volume.Record) (volume.RecordChange, error)) (volume.RecordChange, error) {
	return r.store.UpdateVolumes(ctx, r.node, class, change)
}

// UpdateVolumes locks node's record of a device class, reads it (see readRecord), passes it
// to change and writes exactly the volume.RecordChange change returns — rows, capacity and
// events — in one transaction; volume.Sync is what decides it. Concurrent updates of one
// class (two agents started on one node by mistake included) take turns on an advisory lock.
func (s *Store) UpdateVolumes(ctx context.Context, node, class string, change func(before volume.Record) (volume.RecordChange, error)) (volume.RecordChange, error) {
	var ch volume.RecordChange
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('lvmd/' || $1 || '/' || $2, 0))`, node, class); err != nil {
			return err
		}
		before, err := readRecord(ctx, tx, node, class)
		if err != nil {
			return err
		}
		if ch, err = change(before); err != nil {
			return err
		}
		return s.writeRecord(ctx, tx, node, class, ch)
	})
	if err != nil {
		return volume.RecordChange{}, fmt.Errorf("record volumes of %s: %w", class, err)
	}
	return ch, nil
}

// readRecord reads node's record of class: its volumes, its capacity (nil before the first
// record) and the backups restore jobs read into volumes the record does not hold (only
// those can be new).
func readRecord(ctx context.Context, tx pgx.Tx, node, class string) (volume.Record, error) {
	r := volume.Record{Node: node}
	rows, err := tx.Query(ctx, `SELECT name, size_bytes, tags FROM volumes WHERE node = $1 AND device_class = $2 ORDER BY name`, node, class)
	if err != nil {
		return r, err
	}
	r.Volumes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (volume.Volume, error) {
		v := volume.Volume{DeviceClass: class}
		var size int64
		err := row.Scan(&v.Name, &size, &v.Tags)
		v.Size = uint64(size)
		if len(v.Tags) == 0 {
			v.Tags = nil
		}
		return v, err
	})
	if err != nil {
		return r, err
	}
	c := volume.Capacity{DeviceClass: class}
	var size, free int64
	err = tx.QueryRow(ctx, `SELECT volume_group, is_default, size_bytes, free_bytes, volume_count FROM capacity WHERE node = $1 AND device_class = $2`,
		node, class).Scan(&c.VolumeGroup, &c.Default, &size, &free, &c.Volumes)
	switch {
	case err == nil:
		c.Size, c.Free = uint64(size), uint64(free)
		r.Capacity = &c
	case !errors.Is(err, pgx.ErrNoRows):
		return r, err
	}
	// A restore job is named after its volume, one per node and name.
	rows, err = tx.Query(ctx, `SELECT name, location FROM jobs j WHERE node = $1 AND kind = 'restore' AND device_class = $2
		AND NOT EXISTS (SELECT 1 FROM volumes v WHERE v.node = j.node AND v.device_class = j.device_class AND v.name = j.name)`, node, class)
	if err != nil {
		return r, err
	}
	r.RestoredFrom = map[string]string{}
	var name, location string
	_, err = pgx.ForEachRow(rows, []any{&name, &location}, func() error {
		r.RestoredFrom[name] = location
		return nil
	})
	return r, err
}

// writeRecord writes ch over node's record of class: its rows, its capacity, then its events
// in their order.
func (s *Store) writeRecord(ctx context.Context, tx pgx.Tx, node, class string, ch volume.RecordChange) error {
	for _, v := range ch.Insert {
		if err := inClass(class, v.DeviceClass, v.Name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO volumes (node, device_class, name, size_bytes, tags) VALUES ($1, $2, $3, $4, $5)`,
			node, class, v.Name, int64(v.Size), tagsOf(v)); err != nil {
			return err
		}
	}
	for _, v := range ch.Update {
		if err := inClass(class, v.DeviceClass, v.Name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE volumes SET size_bytes = $4, tags = $5 WHERE node = $1 AND device_class = $2 AND name = $3`,
			node, class, v.Name, int64(v.Size), tagsOf(v)); err != nil {
			return err
		}
	}
	for _, name := range ch.Delete {
		if _, err := tx.Exec(ctx, `DELETE FROM volumes WHERE node = $1 AND device_class = $2 AND name = $3`, node, class, name); err != nil {
			return err
		}
	}
	if c := ch.Capacity; c != nil {
		if err := inClass(class, c.DeviceClass, "capacity"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO capacity (node, device_class, volume_group, is_default, size_bytes, free_bytes, volume_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (node, device_class) DO UPDATE SET volume_group = $3, is_default = $4, size_bytes = $5, free_bytes = $6, volume_count = $7`,
			node, class, c.VolumeGroup, c.Default, int64(c.Size), int64(c.Free), c.Volumes); err != nil {
			return err
		}
	}
	for _, e := range ch.Events {
		payload, err := lvmdevents.Payload(ctx, e)
		if err != nil {
			return err
		}
		if err := s.publish(ctx, tx, payload); err != nil {
			return err
		}
	}
	return nil
}

// inClass refuses a row of another class than the record's: the store writes a change only
// where it was read.
func inClass(class, got, what string) error {
	if got != class {
		return fmt.Errorf("%s of class %q cannot be written in class %q's record", what, got, class)
	}
	return nil
}

func tagsOf(v volume.Volume) []string {
	if v.Tags == nil {
		return []string{}
	}
	return v.Tags
}
