package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// AddSamples appends samples to the usage history.
func (s *Store) AddSamples(ctx context.Context, samples []cluster.Sample) error {
	rows := make([][]any, len(samples))
	for i, x := range samples {
		rows[i] = []any{x.At, x.Health, x.Checks, x.Used, x.Total, x.Available, x.OSDsUp, x.OSDsIn, x.NodesReady, x.NodesTotal}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"usage_samples"},
		[]string{"at", "health", "checks", "used_bytes", "total_bytes", "available_bytes", "osds_up", "osds_in", "nodes_ready", "nodes_total"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("add usage samples: %w", err)
	}
	return nil
}

// SamplesSince returns the samples taken at or after t, oldest first, preceded by the newest
// sample taken before t.
func (s *Store) SamplesSince(ctx context.Context, t time.Time) ([]cluster.Sample, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+sampleColumns+` FROM (
			(SELECT * FROM usage_samples WHERE at < $1 ORDER BY at DESC, id DESC LIMIT 1)
			UNION ALL
			(SELECT * FROM usage_samples WHERE at >= $1)
		) s ORDER BY at, id`, t)
	if err != nil {
		return nil, fmt.Errorf("read usage samples: %w", err)
	}
	return pgx.CollectRows(rows, scanSample)
}

// sampleColumns are what scanSample reads; rows from before available_bytes existed read
// total − used.
const sampleColumns = `at, health, checks, used_bytes, total_bytes,
	COALESCE(available_bytes, GREATEST(total_bytes - used_bytes, 0)), osds_up, osds_in, nodes_ready, nodes_total`

func scanSample(row pgx.CollectableRow) (cluster.Sample, error) {
	var x cluster.Sample
	err := row.Scan(&x.At, &x.Health, &x.Checks, &x.Used, &x.Total, &x.Available, &x.OSDsUp, &x.OSDsIn, &x.NodesReady, &x.NodesTotal)
	return x, err
}

// SamplesBetween returns the samples taken at or after from and at or before to, oldest first.
func (s *Store) SamplesBetween(ctx context.Context, from, to time.Time) ([]cluster.Sample, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sampleColumns+` FROM usage_samples
		WHERE at >= $1 AND at <= $2 ORDER BY at, id`, from, to)
	if err != nil {
		return nil, fmt.Errorf("read usage samples: %w", err)
	}
	return pgx.CollectRows(rows, scanSample)
}

// PruneSamples deletes samples taken before `before`, and all but the newest keep.
func (s *Store) PruneSamples(ctx context.Context, before time.Time, keep int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM usage_samples WHERE at < $1
			OR id <= (SELECT id FROM usage_samples ORDER BY id DESC OFFSET $2 LIMIT 1)`, before, keep)
	if err != nil {
		return 0, fmt.Errorf("prune usage samples: %w", err)
	}
	return tag.RowsAffected(), nil
}
