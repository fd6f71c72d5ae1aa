package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	lvmdevents "github.com/plinth-dev/plinth/services/lvmd-agent/internal/events"
)

var _ backup.JobStore = (*Store)(nil)

// maxMessage bounds a job's stored message (it may quote an object store's answer).
const maxMessage = 4 << 10

const jobColumns = `id, node, kind, name, volume_handle, device_class, state, message, retryable, location,
	encrypted, synchronous, bytes_done, size_bytes, owner, attempts, created_at, updated_at, started_at, finished_at,
	s3_endpoint, s3_bucket, s3_prefix, s3_verify_tls, default_store`

func scanJob(row pgx.Row) (backup.Job, error) {
	var j backup.Job
	var done, size int64
	var finished *time.Time
	err := row.Scan(&j.ID, &j.Node, &j.Kind, &j.Name, &j.VolumeHandle, &j.DeviceClass, &j.State, &j.Message, &j.Retryable,
		&j.Location, &j.Encrypted, &j.Synchronous, &done, &size, &j.Owner, &j.Attempts, &j.CreatedAt, &j.UpdatedAt,
		&j.StartedAt, &finished, &j.Store.Endpoint, &j.Store.Bucket, &j.Store.Prefix, &j.Store.VerifyTLS, &j.Store.Default)
	if errors.Is(err, pgx.ErrNoRows) {
		return backup.Job{}, backup.ErrJobNotFound
	}
	j.BytesDone, j.SizeBytes = uint64(done), uint64(size)
	if finished != nil {
		j.FinishedAt = *finished
	}
	return j, err
}

// Get returns the job of (node, kind, name, volume).
func (s *Store) Get(ctx context.Context, node string, kind backup.Kind, name, vol string) (backup.Job, error) {
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE node = $1 AND kind = $2 AND name = $3 AND volume_handle = $4`,
		node, kind, name, vol))
}

// Claim inserts j in progress, or returns the existing job of its key (restarting a
// retryable one, or with restart any finished one). The state event is written with the
// change.
func (s *Store) Claim(ctx context.Context, j backup.Job, restart bool) (backup.Job, bool, error) {
	var out backup.Job
	var claimed bool
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanJob(tx.QueryRow(ctx, `INSERT INTO jobs (node, kind, name, volume_handle, device_class, state, location,
				encrypted, synchronous, size_bytes, owner, s3_endpoint, s3_bucket, s3_prefix, s3_verify_tls, default_store)
			VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (node, kind, name, volume_handle) DO NOTHING
			RETURNING `+jobColumns,
			j.Node, j.Kind, j.Name, j.VolumeHandle, j.DeviceClass, j.Location, j.Encrypted, j.Synchronous, int64(j.SizeBytes), j.Owner,
			j.Store.Endpoint, j.Store.Bucket, j.Store.Prefix, j.Store.VerifyTLS, j.Store.Default))
		claimed = err == nil
		if errors.Is(err, backup.ErrJobNotFound) {
			// The key exists: restart it if it is retryable, else report it as it is.
			out, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET state = 'in_progress', message = '', retryable = false,
					device_class = $5, location = $6, encrypted = $7, synchronous = $8, size_bytes = $9, owner = $10,
					bytes_done = 0, attempts = attempts + 1, updated_at = now(), started_at = now(), finished_at = NULL,
					s3_endpoint = $12, s3_bucket = $13, s3_prefix = $14, s3_verify_tls = $15, default_store = $16
				WHERE node = $1 AND kind = $2 AND name = $3 AND volume_handle = $4
					AND (state = 'error' AND retryable OR $11 AND state <> 'in_progress')
				RETURNING `+jobColumns,
				j.Node, j.Kind, j.Name, j.VolumeHandle, j.DeviceClass, j.Location, j.Encrypted, j.Synchronous, int64(j.SizeBytes), j.Owner, restart,
				j.Store.Endpoint, j.Store.Bucket, j.Store.Prefix, j.Store.VerifyTLS, j.Store.Default))
			claimed = err == nil
			if errors.Is(err, backup.ErrJobNotFound) {
				out, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs
					WHERE node = $1 AND kind = $2 AND name = $3 AND volume_handle = $4`, j.Node, j.Kind, j.Name, j.VolumeHandle))
			}
		}
		if err != nil || !claimed {
			return err
		}
		ev := lvmdevents.JobState(out)
		ev.Actor = authn.Actor(ctx)
		return s.publish(ctx, tx, ev)
	})
	if err != nil {
		return backup.Job{}, false, fmt.Errorf("claim %s job: %w", j.Kind, err)
	}
	return out, claimed, nil
}

// Progress records bytes copied so far.
func (s *Store) Progress(ctx context.Context, id int64, done uint64) error {
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET bytes_done = $2, updated_at = now() WHERE id = $1 AND state = 'in_progress'`, id, int64(done))
	return err
}

// Finish sets a job's final state, with its event. Finishing a job that is no longer in
// progress (an agent that took it over already failed it) changes nothing.
func (s *Store) Finish(ctx context.Context, id int64, o backup.Outcome) (backup.Job, error) {
	var out backup.Job
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanJob(tx.QueryRow(ctx, `UPDATE jobs SET state = $2, message = $3, bytes_done = $4, retryable = $5,
				updated_at = now(), finished_at = now()
			WHERE id = $1 AND state = 'in_progress' RETURNING `+jobColumns,
			id, o.State, input.Truncate(o.Message, maxMessage), int64(o.BytesDone), o.Retryable))
		if errors.Is(err, backup.ErrJobNotFound) {
			out, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
			return err
		}
		if err != nil {
			return err
		}
		return s.publish(ctx, tx, lvmdevents.JobState(out))
	})
	return out, err
}

// Interrupt fails every job of node in progress under another owner, as retryable.
func (s *Store) Interrupt(ctx context.Context, node, owner, message string) (int, error) {
	n := 0
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `UPDATE jobs SET state = 'error', retryable = true, message = $3, updated_at = now(), finished_at = now()
			WHERE node = $1 AND owner <> $2 AND state = 'in_progress' RETURNING `+jobColumns, node, owner, message)
		if err != nil {
			return err
		}
		var jobs []backup.Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			jobs = append(jobs, j)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := s.publish(ctx, tx, lvmdevents.JobState(j)); err != nil {
				return err
			}
		}
		n = len(jobs)
		return nil
	})
	return n, err
}

// JobByID returns node's job id, or backup.ErrJobNotFound (also for another node's job).
func (s *Store) JobByID(ctx context.Context, node string, id int64) (backup.Job, error) {
	return scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE node = $1 AND id = $2`, node, id))
}

// JobsPage returns up to limit jobs of node, newest start first (ties by id), after the
// cursor when one is given.
func (s *Store) JobsPage(ctx context.Context, node string, after *backup.JobCursor, limit int) ([]backup.Job, error) {
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE node = $1 ORDER BY started_at DESC, id DESC LIMIT $2`
	args := []any{node, limit}
	if after != nil {
		q = `SELECT ` + jobColumns + ` FROM jobs WHERE node = $1 AND (started_at, id) < ($3, $4)
			ORDER BY started_at DESC, id DESC LIMIT $2`
		args = append(args, after.StartedAt, after.ID)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []backup.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// DeleteBackup removes backup job j (not in progress) with its BackupDeleted event, naming the
// user whose request ctx carries.
func (s *Store) DeleteBackup(ctx context.Context, j backup.Job, objects int) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE node = $1 AND id = $2 AND kind = 'backup' AND state <> 'in_progress'`, j.Node, j.ID)
		if err != nil {
			return fmt.Errorf("delete backup job: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return s.whyNot(ctx, tx, j.Node, j.ID)
		}
		ev := &eventsv1.BackupDeleted{Node: j.Node, Name: j.Name, VolumeHandle: j.VolumeHandle, Location: j.Location,
			ObjectsDeleted: uint32(min(objects, math.MaxUint32)), Actor: authn.Actor(ctx)}
		return s.publish(ctx, tx, ev)
	})
}

// Dismiss removes failed job id of node.
func (s *Store) Dismiss(ctx context.Context, node string, id int64) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM jobs WHERE node = $1 AND id = $2 AND state = 'error'`, node, id)
		if err != nil {
			return fmt.Errorf("dismiss job: %w", err)
		}
		if tag.RowsAffected() == 0 {
			if err := s.whyNot(ctx, tx, node, id); !errors.Is(err, backup.ErrJobRunning) {
				return err
			}
			return backup.ErrNotFailed
		}
		return nil
	})
}

// whyNot says why job id of node was not removed: gone, or in progress, or not failed.
func (s *Store) whyNot(ctx context.Context, tx pgx.Tx, node string, id int64) error {
	var state backup.State
	err := tx.QueryRow(ctx, `SELECT state FROM jobs WHERE node = $1 AND id = $2`, node, id).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return backup.ErrJobNotFound
	case err != nil:
		return err
	case state == backup.InProgress:
		return backup.ErrJobRunning
	}
	return backup.ErrNotFailed
}
