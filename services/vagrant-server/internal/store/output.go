package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/jobqueue"
)

var _ joboutput.Store = (*Store)(nil)

// AppendOutput stores events as the next events of job jobID, in one transaction.
func (s *Store) AppendOutput(ctx context.Context, jobID, runner string, scope joboutput.Scope, after int64, events []*joboutput.Event) error {
	stmts, err := s.AppendStatements(jobID, runner, scope, after, events)
	if err != nil || len(stmts) == 0 {
		return err
	}
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, st := range stmts {
			if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
				return fmt.Errorf("job %s: store output: %w", jobID, err)
			}
		}
		return nil
	})
}

// AppendStatements returns the statements storing events as events after+1… of job jobID:
// the job's scope (when it has one) with its first batch, then the rows in event order, so their ids (the
// log's order) follow the job's numbering. Numbers already taken fail the insert.
func (s *Store) AppendStatements(jobID, runner string, scope joboutput.Scope, after int64, events []*joboutput.Event) ([]jobqueue.Stmt, error) {
	if len(events) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(events))
	times := make([]*time.Time, len(events))
	blobs := make([][]byte, len(events))
	for i, ev := range events {
		b, err := proto.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("job %s: marshal terminal event: %w", jobID, err)
		}
		seqs[i], blobs[i] = after+int64(i)+1, b
		if ts := ev.GetTimestamp(); ts != nil {
			t := ts.AsTime()
			times[i] = &t
		}
	}
	var stmts []jobqueue.Stmt
	if after == 0 && !scope.IsZero() { // output of a job without a scope is in no log stream
		stmts = append(stmts, jobqueue.Stmt{SQL: `INSERT INTO job_scope (job_id, runner_id, basis_id, project_id, target_id)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (job_id) DO NOTHING`,
			Args: []any{jobID, runner, nullIfEmpty(scope.BasisID), nullIfEmpty(scope.ProjectID), nullIfEmpty(scope.TargetID)}})
	}
	return append(stmts, jobqueue.Stmt{SQL: `INSERT INTO job_output (job_id, seq, time, event)
			SELECT $1, u.seq, coalesce(u.time, now()), u.event
			FROM unnest($2::bigint[], $3::timestamptz[], $4::bytea[]) AS u(seq, time, event)
			ORDER BY u.seq`, Args: []any{jobID, seqs, times, blobs}}), nil
}

// ReadOutput returns up to limit events of job jobID numbered above after.
func (s *Store) ReadOutput(ctx context.Context, jobID string, after int64, limit int) ([]joboutput.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_id, '', seq, time, event FROM job_output
		WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, jobID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("job %s: read output: %w", jobID, err)
	}
	out, err := pgx.CollectRows(rows, scanEntry)
	if err != nil {
		return nil, fmt.Errorf("job %s: read output: %w", jobID, err)
	}
	return out, nil
}

// scanEntry scans job_id, runner, seq, time, event.
func scanEntry(row pgx.CollectableRow) (joboutput.Entry, error) {
	var e joboutput.Entry
	var b []byte
	if err := row.Scan(&e.JobID, &e.Runner, &e.Seq, &e.Time, &b); err != nil {
		return e, err
	}
	return decodeEntry(e, b)
}

// decodeEntry fills e.Event from its stored bytes.
func decodeEntry(e joboutput.Entry, b []byte) (joboutput.Entry, error) {
	e.Event = &joboutput.Event{}
	if err := proto.Unmarshal(b, e.Event); err != nil {
		return e, fmt.Errorf("job %s: decode output event %d: %w", e.JobID, e.Seq, err)
	}
	return e, nil
}
