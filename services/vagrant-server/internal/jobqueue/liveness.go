package jobqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// liveness refreshes last_seen of the runners whose RunnerConfig stream this replica holds,
// every third of Options.RunnerTimeout. A replica that dies takes its streams with it
// without marking their runners offline; the reaper of any replica does it once their
// last_seen is older than RunnerTimeout (expireRunners). A runner marked offline while its
// stream here lives on (this replica could not reach the database for that long) is
// brought back online by the next refresh.
type liveness struct {
	q        *Queue
	mu       sync.Mutex
	sessions map[string]int64 // runner id → session of the stream held here
}

func newLiveness(q *Queue) *liveness { return &liveness{q: q, sessions: map[string]int64{}} }

func (l *liveness) hold(id string, session int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sessions[id] = session
}

func (l *liveness) release(id string, session int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions[id] == session {
		delete(l.sessions, id)
	}
}

func (l *liveness) run(ctx context.Context) {
	t := time.NewTicker(l.q.opts.RunnerTimeout / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.refresh(ctx); err != nil && ctx.Err() == nil {
			l.q.opts.Logger.WarnContext(ctx, "job queue: refreshing runners' last_seen failed; retrying", "error", err)
		}
	}
}

// refresh stamps the held runners' last_seen in one statement and revives any of them the
// reaper marked offline.
func (l *liveness) refresh(ctx context.Context) error {
	l.mu.Lock()
	ids := make([]string, 0, len(l.sessions))
	sessions := make([]int64, 0, len(l.sessions))
	for id, s := range l.sessions {
		ids, sessions = append(ids, id), append(sessions, s)
	}
	l.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	return pg.InTx(ctx, l.q.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runners r SET last_seen = now(), online = true
			FROM (SELECT r0.id, r0.online AS was_online FROM runners r0
				JOIN unnest($1::text[], $2::bigint[]) AS s(id, session) ON r0.id = s.id AND r0.session = s.session
				FOR UPDATE OF r0) old
			WHERE r.id = old.id AND NOT old.was_online
			RETURNING r.runner`, ids, sessions)
		if err != nil {
			return fmt.Errorf("revive runners: %w", err)
		}
		revived, err := collectRunners(rows)
		if err != nil {
			return err
		}
		for _, r := range revived {
			if err := l.q.recordRunnerChange(ctx, tx, r, true); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE runners r SET last_seen = now()
			FROM unnest($1::text[], $2::bigint[]) AS s(id, session)
			WHERE r.id = s.id AND r.session = s.session AND r.online`, ids, sessions)
		return err
	})
}

// expireRunners marks offline the online runners nobody refreshed for Options.RunnerTimeout,
// with their runner.state_changed events; jobs are no longer assignable to them
// (ValidateJob). It returns how many.
func (q *Queue) expireRunners(ctx context.Context) (int, error) {
	var n int
	err := pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH stale AS (
				SELECT id FROM runners
				WHERE online AND last_seen < now() - $1::bigint * interval '1 microsecond'
				FOR UPDATE SKIP LOCKED)
			UPDATE runners r SET online = false FROM stale WHERE r.id = stale.id
			RETURNING r.runner`, q.opts.RunnerTimeout.Microseconds())
		if err != nil {
			return err
		}
		gone, err := collectRunners(rows)
		if err != nil {
			return err
		}
		for _, r := range gone {
			if err := q.recordRunnerChange(ctx, tx, r, false); err != nil {
				return err
			}
		}
		n = len(gone)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire runners: %w", err)
	}
	return n, nil
}

// collectRunners decodes a column of stored hashicorp.vagrant.Runner messages.
func collectRunners(rows pgx.Rows) ([]*vagrant.Runner, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*vagrant.Runner, error) {
		var b []byte
		if err := row.Scan(&b); err != nil {
			return nil, err
		}
		r := &vagrant.Runner{}
		if err := proto.Unmarshal(b, r); err != nil {
			return nil, fmt.Errorf("decode stored runner: %w", err)
		}
		return r, nil
	})
}
