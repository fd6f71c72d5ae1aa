package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/pg"

	lvmdevents "github.com/plinth-dev/plinth/services/lvmd-agent/internal/events"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// Changes counts what one Sync reported.
type Changes struct {
	Created, Removed, Resized int
	CapacityChanged           bool
}

// Sync records a device class's current volumes and capacity and, in the same transaction,
// writes an event for every difference from what was recorded before: VolumeCreated,
// VolumeRemoved, VolumeResized and CapacityChanged. Concurrent Syncs of one class (two
// agents started on one node by mistake included) take turns on an advisory lock.
func (s *Store) Sync(ctx context.Context, node string, c volume.Capacity, vols []volume.Volume) (Changes, error) {
	var ch Changes
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		ch = Changes{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('lvmd/' || $1 || '/' || $2, 0))`, node, c.DeviceClass); err != nil {
			return err
		}
		known, err := knownVolumes(ctx, tx, node, c.DeviceClass)
		if err != nil {
			return err
		}
		for _, v := range vols {
			old, ok := known[v.Name]
			delete(known, v.Name)
			switch {
			case !ok:
				ch.Created++
				if err := s.volumeCreated(ctx, tx, node, v); err != nil {
					return err
				}
			case old.Size != v.Size || !slices.Equal(old.Tags, v.Tags):
				if old.Size != v.Size {
					ch.Resized++
					if err := s.publish(ctx, tx, &eventsv1.VolumeResized{Node: node, DeviceClass: v.DeviceClass, Name: v.Name,
						SizeBytes: v.Size, PreviousSizeBytes: old.Size, Actor: authn.Actor(ctx)}); err != nil {
						return err
					}
				}
				if _, err := tx.Exec(ctx, `UPDATE volumes SET size_bytes = $4, tags = $5 WHERE node = $1 AND device_class = $2 AND name = $3`,
					node, v.DeviceClass, v.Name, int64(v.Size), tagsOf(v)); err != nil {
					return err
				}
			}
		}
		for name := range known {
			ch.Removed++
			if _, err := tx.Exec(ctx, `DELETE FROM volumes WHERE node = $1 AND device_class = $2 AND name = $3`, node, c.DeviceClass, name); err != nil {
				return err
			}
			if err := s.publish(ctx, tx, &eventsv1.VolumeRemoved{Node: node, DeviceClass: c.DeviceClass, Name: name, Actor: authn.Actor(ctx)}); err != nil {
				return err
			}
		}
		changed, err := s.syncCapacity(ctx, tx, node, c)
		ch.CapacityChanged = changed
		return err
	})
	if err != nil {
		return Changes{}, fmt.Errorf("record volumes of %s: %w", c.DeviceClass, err)
	}
	return ch, nil
}

func knownVolumes(ctx context.Context, tx pgx.Tx, node, class string) (map[string]volume.Volume, error) {
	rows, err := tx.Query(ctx, `SELECT name, size_bytes, tags FROM volumes WHERE node = $1 AND device_class = $2`, node, class)
	if err != nil {
		return nil, err
	}
	known := map[string]volume.Volume{}
	for rows.Next() {
		var v volume.Volume
		var size int64
		if err := rows.Scan(&v.Name, &size, &v.Tags); err != nil {
			rows.Close()
			return nil, err
		}
		v.Size, v.DeviceClass = uint64(size), class
		if len(v.Tags) == 0 {
			v.Tags = nil
		}
		known[v.Name] = v
	}
	return known, rows.Err()
}

// volumeCreated records a new volume; restored_from names the backup a restore job of this
// volume reads.
func (s *Store) volumeCreated(ctx context.Context, tx pgx.Tx, node string, v volume.Volume) error {
	if _, err := tx.Exec(ctx, `INSERT INTO volumes (node, device_class, name, size_bytes, tags) VALUES ($1, $2, $3, $4, $5)`,
		node, v.DeviceClass, v.Name, int64(v.Size), tagsOf(v)); err != nil {
		return err
	}
	var from string
	err := tx.QueryRow(ctx, `SELECT location FROM jobs WHERE node = $1 AND kind = 'restore' AND name = $2 AND device_class = $3`,
		node, v.Name, v.DeviceClass).Scan(&from)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return s.publish(ctx, tx, &eventsv1.VolumeCreated{Node: node, DeviceClass: v.DeviceClass, Name: v.Name,
		SizeBytes: v.Size, Tags: v.Tags, RestoredFrom: from, Actor: authn.Actor(ctx)})
}

func (s *Store) syncCapacity(ctx context.Context, tx pgx.Tx, node string, c volume.Capacity) (bool, error) {
	var size, free int64
	var count int
	err := tx.QueryRow(ctx, `SELECT size_bytes, free_bytes, volume_count FROM capacity WHERE node = $1 AND device_class = $2`,
		node, c.DeviceClass).Scan(&size, &free, &count)
	if err == nil && uint64(size) == c.Size && uint64(free) == c.Free && count == c.Volumes {
		return false, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO capacity (node, device_class, volume_group, is_default, size_bytes, free_bytes, volume_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (node, device_class) DO UPDATE SET volume_group = $3, is_default = $4, size_bytes = $5, free_bytes = $6, volume_count = $7`,
		node, c.DeviceClass, c.VolumeGroup, c.Default, int64(c.Size), int64(c.Free), c.Volumes); err != nil {
		return false, err
	}
	return true, s.publish(ctx, tx, &eventsv1.CapacityChanged{Node: node, DeviceClass: lvmdevents.Capacity(c)})
}

func tagsOf(v volume.Volume) []string {
	if v.Tags == nil {
		return []string{}
	}
	return v.Tags
}
