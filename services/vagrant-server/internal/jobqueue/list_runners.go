package jobqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// HeldJob is the unfinished job assigned to a runner.
type HeldJob struct {
	ID        string
	Operation string
	// State is WAITING (assigned, not acknowledged) or RUNNING.
	State      vagrant.Job_State
	AssignTime time.Time
}

// ListedRunner is a registered runner with the job it holds now, if any.
type ListedRunner struct {
	RunnerInfo
	// Job is the runner's WAITING or RUNNING job (the newest assigned, should there be more
	// than one); nil when it holds none.
	Job *HeldJob
}

// ListRunners returns at most limit registered runners whose id sorts after after (empty:
// from the first), ordered by id: keyset paging, so a page costs the same wherever it is.
// Online is what the runners table says: set while a replica holds the runner's stream and
// refreshes it, cleared when the stream ends or the reaper finds it stale.
func (q *Queue) ListRunners(ctx context.Context, after string, limit int) ([]ListedRunner, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("list runners: limit must be positive, got %d", limit)
	}
	// The lateral join reads only WAITING and RUNNING jobs (their partial deadline indexes),
	// never the finished history.
	rows, err := q.pool.Query(ctx, `SELECT r.runner, r.online, r.first_seen, r.last_seen,
			j.id, j.operation, j.state, j.assign_time
		FROM runners r
		LEFT JOIN LATERAL (SELECT id, operation, state, assign_time FROM jobs
			WHERE assigned_runner = r.id AND state IN (2, 3)
			ORDER BY assign_time DESC NULLS LAST, seq DESC LIMIT 1) j ON true
		WHERE r.id > $1
		ORDER BY r.id
		LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ListedRunner, error) {
		var (
			lr       ListedRunner
			b        []byte
			jobID    *string
			op       *string
			state    *int16
			assigned *time.Time
		)
		if err := row.Scan(&b, &lr.Online, &lr.FirstSeen, &lr.LastSeen, &jobID, &op, &state, &assigned); err != nil {
			return lr, fmt.Errorf("list runners: %w", err)
		}
		lr.Runner = &vagrant.Runner{}
		if err := proto.Unmarshal(b, lr.Runner); err != nil {
			return lr, fmt.Errorf("list runners: decode stored runner: %w", err)
		}
		if jobID != nil {
			lr.Job = &HeldJob{ID: *jobID, Operation: *op, State: vagrant.Job_State(*state)}
			if assigned != nil {
				lr.Job.AssignTime = *assigned
			}
		}
		return lr, nil
	})
}
