package jobqueue

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// Get returns the job with all its server fields; ErrJobNotFound when there is none.
func (q *Queue) Get(ctx context.Context, id string) (*vagrant.Job, error) {
	r, err := scanJob(q.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", quoteID(id), ErrJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load job %s: %w", quoteID(id), err)
	}
	return r.job()
}

// Filter narrows List. The zero Filter lists every job.
type Filter struct {
	// States keeps jobs in one of these states; empty keeps all.
	States []vagrant.Job_State
	// AssignedRunner keeps jobs assigned to this runner; empty keeps all.
	AssignedRunner string
	// Limit caps the number of jobs returned; 0 means no cap.
	Limit int
	// NewestFirst lists in reverse queue order, so a Limit keeps the newest jobs.
	NewestFirst bool
}

// List returns the jobs matching f in queue order (oldest first, or newest first).
func (q *Queue) List(ctx context.Context, f Filter) ([]*vagrant.Job, error) {
	states := make([]int16, 0, len(f.States))
	for _, s := range f.States {
		states = append(states, int16(s))
	}
	var limit *int
	if f.Limit > 0 {
		limit = &f.Limit
	}
	order := "seq"
	if f.NewestFirst {
		order = "seq DESC"
	}
	rows, err := q.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE (cardinality($1::smallint[]) = 0 OR state = ANY($1))
		  AND ($2 = '' OR assigned_runner = $2)
		ORDER BY `+order+` LIMIT $3`, states, f.AssignedRunner, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var jobs []*vagrant.Job
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		j, err := r.job()
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// PruneOldJobs deletes finished jobs (SUCCESS or ERROR) except the keep most recently
// completed ones (upstream kept the oldest) and returns how many it deleted. Queued, waiting
// and running jobs are never pruned.
func (q *Queue) PruneOldJobs(ctx context.Context, keep int) (int64, error) {
	if keep < 0 {
		return 0, fmt.Errorf("prune jobs: keep must not be negative, got %d", keep)
	}
	tag, err := q.pool.Exec(ctx, `DELETE FROM jobs WHERE state IN (4, 5) AND id NOT IN (
			SELECT id FROM jobs WHERE state IN (4, 5) ORDER BY complete_time DESC, seq DESC LIMIT $1)`, keep)
	if err != nil {
		return 0, fmt.Errorf("prune jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}
