package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/pg"
)

// RunnerInfo is a registered runner.
type RunnerInfo struct {
	// Runner is what the runner registered: id, by_id_only and components.
	Runner *vagrant.Runner
	// Online is true while a RunnerConfig stream of the runner is open.
	Online    bool
	FirstSeen time.Time
	LastSeen  time.Time
}

// RegisterRunner records r (a RunnerConfig Open) for registrant and marks it online,
// replacing an earlier registration of the same id by the same registrant. An id registered
// first by another registrant is ErrRunnerTaken, and nothing changes. It returns the session
// number to hand to RunnerOffline when this registration's stream ends.
func (q *Queue) RegisterRunner(ctx context.Context, r *vagrant.Runner, registrant string) (int64, error) {
	if r.GetId() == "" {
		return 0, &input.Error{Field: "runner.id", Reason: "required: a unique id chosen by the runner (e.g. a UUID)"}
	}
	if registrant == "" {
		return 0, errors.New("register runner: no registrant")
	}
	b, err := proto.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("marshal runner: %w", err)
	}
	var session int64
	err = pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		// The conflict's update is conditional: a row the WHERE refuses returns nothing.
		err := tx.QueryRow(ctx, `INSERT INTO runners (id, by_id_only, runner, component_tokens, online, session, first_seen, last_seen, registrant)
			VALUES ($1, $2, $3, $4, true, 1, now(), now(), $5)
			ON CONFLICT (id) DO UPDATE SET by_id_only = EXCLUDED.by_id_only, runner = EXCLUDED.runner,
				component_tokens = EXCLUDED.component_tokens, online = true,
				session = runners.session + 1, last_seen = now(), registrant = EXCLUDED.registrant
			WHERE runners.registrant IS NULL OR runners.registrant = EXCLUDED.registrant
			RETURNING session`,
			r.GetId(), r.GetByIdOnly(), b, componentTokens(r.GetComponents()), registrant).Scan(&session)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("runner %s: %w", quoteID(r.GetId()), ErrRunnerTaken)
		}
		if err != nil {
			return fmt.Errorf("register runner %s: %w", quoteID(r.GetId()), err)
		}
		return q.recordRunnerChange(ctx, tx, r, true)
	})
	if err == nil {
		q.live.hold(r.GetId(), session)
	}
	return session, err
}

// RunnerOffline marks the runner offline when its stream of the given session ends. A
// newer registration (the runner reconnected, perhaps to another replica) stays online.
func (q *Queue) RunnerOffline(ctx context.Context, id string, session int64) error {
	q.live.release(id, session)
	return pg.InTx(ctx, q.pool, func(tx pgx.Tx) error {
		var b []byte
		err := tx.QueryRow(ctx, `UPDATE runners SET online = false, last_seen = now()
			WHERE id = $1 AND session = $2 AND online RETURNING runner`, id, session).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mark runner %s offline: %w", quoteID(id), err)
		}
		r := &vagrant.Runner{}
		if err := proto.Unmarshal(b, r); err != nil {
			return fmt.Errorf("runner %s: decode stored runner: %w", quoteID(id), err)
		}
		return q.recordRunnerChange(ctx, tx, r, false)
	})
}

// CheckRegistrant answers whether registrant may take jobs as runner id: nil when it
// registered the id, ErrRunnerNotFound when nobody did, ErrRunnerTaken when another did (or
// the id's registration predates registrants: its runner must register again first).
func (q *Queue) CheckRegistrant(ctx context.Context, id, registrant string) error {
	var owner *string
	err := q.pool.QueryRow(ctx, `SELECT registrant FROM runners WHERE id = $1`, id).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("runner %s: %w", quoteID(id), ErrRunnerNotFound)
	}
	if err != nil {
		return fmt.Errorf("load runner %s: %w", quoteID(id), err)
	}
	if owner == nil || *owner != registrant {
		return fmt.Errorf("runner %s: %w", quoteID(id), ErrRunnerTaken)
	}
	return nil
}

// GetRunner returns a registered runner; ErrRunnerNotFound when it never registered.
func (q *Queue) GetRunner(ctx context.Context, id string) (*RunnerInfo, error) {
	var b []byte
	info := &RunnerInfo{Runner: &vagrant.Runner{}}
	err := q.pool.QueryRow(ctx, `SELECT runner, online, first_seen, last_seen FROM runners WHERE id = $1`, id).
		Scan(&b, &info.Online, &info.FirstSeen, &info.LastSeen)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("runner %s: %w", quoteID(id), ErrRunnerNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load runner %s: %w", quoteID(id), err)
	}
	if err := proto.Unmarshal(b, info.Runner); err != nil {
		return nil, fmt.Errorf("runner %s: decode stored runner: %w", quoteID(id), err)
	}
	return info, nil
}
