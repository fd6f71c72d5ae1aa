package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Everything Login reads and writes, in the order it does: BeginAttempt, UserByName,
// RecordFailure or FinishLogin. identity decides what each writes.

// neverFailed stands in for "no failure yet" so rows can be created before they are locked:
// long before any Forget period, so a new counter counts as one forgotten.
var neverFailed = time.Unix(0, 0).UTC()

type counterKey struct{ kind, key string }

// counterKeys are the keys of the attempt's pair counter and of its address counter; an
// unknown address ("", a unix socket) has none (ok false) and is a pair of its own. A space
// never occurs in a username or an address.
func counterKeys(a identity.Attempt) (pair, addr counterKey, ok bool) {
	pair = counterKey{"pair", identity.NormalizeUsername(a.Username) + " " + a.ClientAddress}
	return pair, counterKey{"addr", a.ClientAddress}, a.ClientAddress != ""
}

// BeginAttempt locks the attempt's failure counters — its pair's and, with a known address,
// its address's — passes them to count (identity.LockoutPolicy.Count) and writes the counters
// it returns. The rows are locked (created or updated by one upsert), so concurrent attempts
// on any replica see each other's counts and cannot slip past the threshold together. An
// error from count rolls back: nothing is written.
func (s *Store) BeginAttempt(ctx context.Context, a identity.Attempt, count func(before identity.Counters) (identity.Counters, error)) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := readCounters(ctx, tx, a, lockCounter)
		if err != nil {
			return err
		}
		after, err := count(before)
		if err != nil {
			return err
		}
		return writeCounters(ctx, tx, a, before, after)
	})
}

// UserByName finds a user by case-insensitive username.
func (s *Store) UserByName(ctx context.Context, username string) (identity.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1)`, username))
	if err != nil {
		return identity.User{}, notFound(err, "select user")
	}
	return u, nil
}

// RecordFailure writes the login.failed event it is given.
func (s *Store) RecordFailure(ctx context.Context, ev *eventsv1.LoginFailed) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error { return s.publish(ctx, tx, ev) })
}

// FinishLogin locks the user's row first (FOR NO KEY UPDATE: concurrent logins of the user,
// on any replica, wait for each other, while token inserts of other users and their
// foreign-key checks do not), so the count of live tokens finish sees is still true when the
// token is inserted; then the attempt's counters. It writes exactly the change finish returns
// (identity.LoginSucceeded), or nothing when finish fails.
func (s *Store) FinishLogin(ctx context.Context, userID string, a identity.Attempt, finish func(before identity.LoginState) (identity.LoginChange, error)) (identity.LoginChange, error) {
	var c identity.LoginChange
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var before identity.LoginState
		if err := tx.QueryRow(ctx, `SELECT username, disabled, password_hash FROM users WHERE id = $1 FOR NO KEY UPDATE`, userID).Scan(
			&before.Username, &before.Disabled, &before.PasswordHash); err != nil {
			return notFound(err, "lock user")
		}
		// A statement of its own after the lock: it reads what the logins before it committed.
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2`,
			userID, a.At).Scan(&before.LiveTokens); err != nil {
			return fmt.Errorf("count live tokens: %w", err)
		}
		var err error
		if before.Counters, err = readCounters(ctx, tx, a, selectCounter); err != nil {
			return err
		}
		if c, err = finish(before); err != nil {
			return err
		}
		if c.PasswordHash != "" {
			if _, err := tx.Exec(ctx, `UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`, userID, c.PasswordHash); err != nil {
				return fmt.Errorf("update password: %w", err)
			}
		}
		if t := c.Token; t != nil {
			if t.UserID != userID {
				return fmt.Errorf("store: a token of user %s cannot end a login of %s", t.UserID, userID)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tokens (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
				t.ID, t.UserID, t.CreatedAt, t.ExpiresAt); err != nil {
				return fmt.Errorf("insert token: %w", err)
			}
		}
		if err := writeCounters(ctx, tx, a, before.Counters, c.Counters); err != nil {
			return err
		}
		return s.publish(ctx, tx, c.Events...)
	})
	if err != nil {
		return identity.LoginChange{}, err
	}
	return c, nil
}

// readCounters reads the attempt's counters with read: the pair's and, with a known address,
// the address's.
func readCounters(ctx context.Context, tx pgx.Tx, a identity.Attempt, read func(context.Context, pgx.Tx, counterKey) (identity.Counter, error)) (identity.Counters, error) {
	pair, addr, withAddr := counterKeys(a)
	var cs identity.Counters
	var err error
	if cs.Pair, err = read(ctx, tx, pair); err != nil || !withAddr {
		return cs, err
	}
	c, err := read(ctx, tx, addr)
	cs.Address = &c
	return cs, err
}

// lockCounter returns the counter k, locked; a missing one is created with no failures.
func lockCounter(ctx context.Context, tx pgx.Tx, k counterKey) (identity.Counter, error) {
	// One statement creates the counter or locks the one there: with an insert and a separate
	// SELECT … FOR UPDATE, a successful login of the same pair deleting the row in between
	// left nothing to lock, and the racing login failed with Internal.
	var c identity.Counter
	if err := tx.QueryRow(ctx, `INSERT INTO login_failures (kind, key, failures, last_failure_at)
		VALUES ($1, $2, 0, $3) ON CONFLICT (kind, key) DO UPDATE SET kind = EXCLUDED.kind
		RETURNING failures, last_failure_at`, k.kind, k.key, neverFailed).Scan(&c.Failures, &c.LastFailure); err != nil {
		return identity.Counter{}, fmt.Errorf("lock failure counter: %w", err)
	}
	return c, nil
}

// selectCounter returns the counter k, locked when it exists; a missing one is the zero
// Counter.
func selectCounter(ctx context.Context, tx pgx.Tx, k counterKey) (identity.Counter, error) {
	var c identity.Counter
	err := tx.QueryRow(ctx, `SELECT failures, last_failure_at FROM login_failures WHERE kind = $1 AND key = $2 FOR UPDATE`,
		k.kind, k.key).Scan(&c.Failures, &c.LastFailure)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return identity.Counter{}, fmt.Errorf("lock failure counter: %w", err)
	}
	return c, nil
}

// writeCounters writes the counters after over before: the pair's, and the address's when
// after has one (an attempt without an address has none to write).
func writeCounters(ctx context.Context, tx pgx.Tx, a identity.Attempt, before, after identity.Counters) error {
	pair, addr, _ := counterKeys(a)
	if after.Address != nil && before.Address == nil {
		return errors.New("store: an attempt without a client address has no address counter to write")
	}
	if err := writeCounter(ctx, tx, pair, after.Pair); err != nil || after.Address == nil {
		return err
	}
	return writeCounter(ctx, tx, addr, *after.Address)
}

// writeCounter stores c as counter k; the zero Counter is none: its row goes.
func writeCounter(ctx context.Context, tx pgx.Tx, k counterKey, c identity.Counter) error {
	if c.Failures == 0 && c.LastFailure.IsZero() {
		if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE kind = $1 AND key = $2`, k.kind, k.key); err != nil {
			return fmt.Errorf("reset failure counter: %w", err)
		}
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO login_failures (kind, key, failures, last_failure_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, key) DO UPDATE SET failures = EXCLUDED.failures, last_failure_at = EXCLUDED.last_failure_at`,
		k.kind, k.key, c.Failures, c.LastFailure); err != nil {
		return fmt.Errorf("count failure: %w", err)
	}
	return nil
}
