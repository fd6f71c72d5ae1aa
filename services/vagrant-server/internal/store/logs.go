package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/joboutput"
)

// backlogPage is how many events LogBacklog reads per query while walking back.
const backlogPage = 500

// logEntryColumns are what scanEntry reads, from job_output o joined with job_scope s.
const logEntryColumns = `o.job_id, s.runner_id, o.seq, o.time, o.event`

// scopeFilter is the WHERE clause (on job_scope s, argument $1) selecting scope's jobs:
// the most specific id given wins, since a target's jobs are also its project's and basis'.
func scopeFilter(scope joboutput.Scope) (string, string, error) {
	switch {
	case scope.TargetID != "":
		return `s.target_id = $1`, scope.TargetID, nil
	case scope.ProjectID != "":
		return `s.project_id = $1`, scope.ProjectID, nil
	case scope.BasisID != "":
		return `s.basis_id = $1`, scope.BasisID, nil
	}
	return "", "", errors.New("log scope names no basis, project or target")
}

// readSnapshot runs fn in a read-only REPEATABLE READ transaction, so every query sees one
// snapshot, and hands it that snapshot's xmin: the oldest transaction still running, below
// which every writer has finished.
func (s *Store) readSnapshot(ctx context.Context, fn func(tx pgx.Tx, xmin uint64) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var xmin string
	if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text`).Scan(&xmin); err != nil {
		return err
	}
	low, err := strconv.ParseUint(xmin, 10, 64)
	if err != nil {
		return fmt.Errorf("parse snapshot xmin %q: %w", xmin, err)
	}
	if err := fn(tx, low); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// LogBacklog walks the scope's output back from the newest event until the events hold at
// least limit lines (or to the start when limit < 0).
func (s *Store) LogBacklog(ctx context.Context, scope joboutput.Scope, limit int, lines func(*joboutput.Event) int) ([]joboutput.Entry, joboutput.LogCursor, error) {
	filter, id, err := scopeFilter(scope)
	if err != nil {
		return nil, joboutput.LogCursor{}, err
	}
	var back []joboutput.Entry
	cur := joboutput.LogCursor{Seqs: map[string]int64{}}
	err = s.readSnapshot(ctx, func(tx pgx.Tx, low uint64) error {
		cur.Low = low
		before, count := int64(-1), 0
		for limit < 0 || count < limit {
			rows, err := tx.Query(ctx, `SELECT o.id, `+logEntryColumns+` FROM job_output o JOIN job_scope s USING (job_id)
				WHERE `+filter+` AND ($2 < 0 OR o.id < $2) ORDER BY o.id DESC LIMIT $3`, id, before, backlogPage)
			if err != nil {
				return err
			}
			page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (joboutput.Entry, error) {
				var rowID int64
				var e joboutput.Entry
				var b []byte
				if err := r.Scan(&rowID, &e.JobID, &e.Runner, &e.Seq, &e.Time, &b); err != nil {
					return e, err
				}
				before = rowID
				return decodeEntry(e, b)
			})
			if err != nil {
				return err
			}
			for _, e := range page {
				if limit >= 0 && count >= limit {
					break
				}
				back = append(back, e)
				count += lines(e.Event)
			}
			if len(page) < backlogPage {
				break
			}
		}
		// Everything visible now counts as read, including what the backlog left out.
		rows, err := tx.Query(ctx, `SELECT o.job_id, max(o.seq) FROM job_output o JOIN job_scope s USING (job_id)
			WHERE `+filter+` AND o.xid >= $2::text::xid8 GROUP BY o.job_id`, id, strconv.FormatUint(low, 10))
		if err != nil {
			return err
		}
		var job string
		var seq int64
		_, err = pgx.ForEachRow(rows, []any{&job, &seq}, func() error { cur.Seqs[job] = seq; return nil })
		return err
	})
	if err != nil {
		return nil, joboutput.LogCursor{}, fmt.Errorf("read log backlog: %w", err)
	}
	slices.Reverse(back)
	return back, cur, nil
}

// LogSince returns what the scope's jobs wrote since cur. The cursor's watermark advances
// only once everything up to this snapshot was returned; a cut-off page keeps it and
// relies on Seqs, which are in write order per job, to skip what was returned.
func (s *Store) LogSince(ctx context.Context, scope joboutput.Scope, cur joboutput.LogCursor, limit int) ([]joboutput.Entry, joboutput.LogCursor, error) {
	filter, id, err := scopeFilter(scope)
	if err != nil {
		return nil, cur, err
	}
	next := joboutput.LogCursor{Low: cur.Low, Seqs: maps.Clone(cur.Seqs)}
	if next.Seqs == nil {
		next.Seqs = map[string]int64{}
	}
	jobs := slices.Collect(maps.Keys(next.Seqs))
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		seqs[i] = next.Seqs[j]
	}
	var out []joboutput.Entry
	err = s.readSnapshot(ctx, func(tx pgx.Tx, low uint64) error {
		rows, err := tx.Query(ctx, `SELECT `+logEntryColumns+` FROM job_output o JOIN job_scope s USING (job_id)
			LEFT JOIN unnest($3::text[], $4::bigint[]) AS k(job_id, seq) ON k.job_id = o.job_id
			WHERE `+filter+` AND o.xid >= $2::text::xid8 AND o.seq > coalesce(k.seq, 0)
			ORDER BY o.id LIMIT $5`, id, strconv.FormatUint(cur.Low, 10), jobs, seqs, limit+1)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, scanEntry); err != nil {
			return err
		}
		if len(out) > limit {
			out = out[:limit]
		} else {
			next.Low = low
		}
		for _, e := range out {
			next.Seqs[e.JobID] = max(next.Seqs[e.JobID], e.Seq)
		}
		return nil
	})
	if err != nil {
		return nil, cur, fmt.Errorf("follow log: %w", err)
	}
	return out, next, nil
}
