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

// neverFailed stands in for "no failure yet" so rows can be created before they are locked:
// long before any Forget period, so a new counter counts as one forgotten.
var neverFailed = time.Unix(0, 0).UTC()

type counterKey struct{ kind, key string }

// pairKey is the counter key of a (username, address) pair: a space never occurs in a username
// or an address. An unknown address ("", a unix socket) is a pair of its own.
func pairKey(username, addr string) string {
	return identity.NormalizeUsername(username) + " " + addr
}

// BeginAttempt locks the attempt's failure counters — its pair's and, with a known address,
// its address's — passes them to count (identity.LockoutPolicy.Count) and writes the counters
// it returns. The rows are locked (created or updated by one upsert), so concurrent attempts
// on any replica see each other's counts and cannot slip past the threshold together. An
// error from count rolls back: nothing is written.
func (s *Store) BeginAttempt(ctx context.Context, a identity.Attempt, count func(before identity.Counters) (identity.Counters, error)) error {
	pair := counterKey{"pair", pairKey(a.Username, a.ClientAddress)}
	addr := counterKey{"addr", a.ClientAddress}
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var before identity.Counters
		var err error
		if before.Pair, err = lockCounter(ctx, tx, pair); err != nil {
			return err
		}
		if a.ClientAddress != "" {
			c, err := lockCounter(ctx, tx, addr)
			if err != nil {
				return err
			}
			before.Address = &c
		}
		after, err := count(before)
		if err != nil {
			return err
		}
		if after.Address != nil && before.Address == nil {
			return errors.New("store: an attempt without a client address has no address counter to write")
		}
		if err := writeCounter(ctx, tx, pair, after.Pair); err != nil {
			return err
		}
		if after.Address == nil {
			return nil
		}
		return writeCounter(ctx, tx, addr, *after.Address)
	})
}

// lockCounter returns the counter k, locked; a missing one is created with no failures.
func lockCounter(ctx context.Context, tx pgx.Tx, k counterKey) (identity.Counter, error) {
	// One statement creates the counter or locks the one there: with an insert and a separate
	// SELECT … FOR UPDATE, a successful login of the same pair deleting the row in between
	// (forgiveAttempt) left nothing to lock, and the racing login failed with Internal.
	var c identity.Counter
	if err := tx.QueryRow(ctx, `INSERT INTO login_failures (kind, key, failures, last_failure_at)
		VALUES ($1, $2, 0, $3) ON CONFLICT (kind, key) DO UPDATE SET kind = EXCLUDED.kind
		RETURNING failures, last_failure_at`, k.kind, k.key, neverFailed).Scan(&c.Failures, &c.LastFailure); err != nil {
		return identity.Counter{}, fmt.Errorf("lock failure counter: %w", err)
	}
	return c, nil
}

// writeCounter stores c as counter k, locked by lockCounter.
func writeCounter(ctx context.Context, tx pgx.Tx, k counterKey, c identity.Counter) error {
	if _, err := tx.Exec(ctx, `UPDATE login_failures SET failures = $3, last_failure_at = $4
		WHERE kind = $1 AND key = $2`, k.kind, k.key, c.Failures, c.LastFailure); err != nil {
		return fmt.Errorf("count failure: %w", err)
	}
	return nil
}

// forgiveAttempt undoes a successful attempt's counting: the pair starts again from zero;
// the address only gets this attempt back, so a valid login of one's own account cannot wipe
// out the failures one's address earned guessing at others.
func forgiveAttempt(ctx context.Context, tx pgx.Tx, a identity.Attempt) error {
	if _, err := tx.Exec(ctx, `DELETE FROM login_failures WHERE kind = 'pair' AND key = $1`,
		pairKey(a.Username, a.ClientAddress)); err != nil {
		return fmt.Errorf("reset failure counter: %w", err)
	}
	if a.ClientAddress == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE login_failures SET failures = greatest(failures - 1, 0)
		WHERE kind = 'addr' AND key = $1`, a.ClientAddress); err != nil {
		return fmt.Errorf("forgive address attempt: %w", err)
	}
	return nil
}

// RecordFailure writes the login.failed event.
func (s *Store) RecordFailure(ctx context.Context, a identity.Attempt, why identity.LoginFailure) error {
	reason := map[identity.LoginFailure]eventsv1.LoginFailureReason{
		identity.FailureUnknownUser:   eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_UNKNOWN_USER,
		identity.FailureWrongPassword: eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_WRONG_PASSWORD,
		identity.FailureDisabled:      eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_USER_DISABLED,
		identity.FailureLocked:        eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_LOCKED_OUT,
		identity.FailureInvalid:       eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_INVALID_REQUEST,
	}[why]
	username := a.Username
	if why == identity.FailureInvalid {
		username = "" // unvalidated client input (maybe a password typed into the wrong field)
	}
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		return s.publish(ctx, tx, &eventsv1.LoginFailed{
			Username: username, ClientAddress: a.ClientAddress, Reason: reason,
		})
	})
}

// ClearUserThrottles deletes the failure counters of every (username, address) pair of the
// username, so it may log in again from everywhere at once; it returns how many went. The
// addresses' own counters stay: they were earned guessing at any user.
func (s *Store) ClearUserThrottles(ctx context.Context, username string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_failures WHERE kind = 'pair' AND starts_with(key, $1)`,
		identity.NormalizeUsername(username)+" ")
	if err != nil {
		return 0, fmt.Errorf("clear the throttles of a username: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ClearAddressThrottles deletes the failure counters of the address and of every pair with it;
// it returns how many went.
func (s *Store) ClearAddressThrottles(ctx context.Context, addr string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM login_failures
		WHERE (kind = 'addr' AND key = $1) OR (kind = 'pair' AND split_part(key, ' ', 2) = $1)`, addr)
	if err != nil {
		return 0, fmt.Errorf("clear the throttles of an address: %w", err)
	}
	return tag.RowsAffected(), nil
}
