package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// CreateToken stores a login's token, resets the username's failure counter, takes the
// attempt's count back from the address counter and records login.succeeded — atomically,
// once admit accepted the user's count of live tokens. The user's row is locked first
// (FOR NO KEY UPDATE: concurrent logins of the user, on any replica, wait for each other,
// while token inserts of other users and their foreign-key checks do not), so the count
// admit sees is still true when the token is inserted. A refusal keeps no token and no
// event, but still takes the attempt back: the password was right, and a user held at the
// quota must not be throttled for trying.
func (s *Store) CreateToken(ctx context.Context, t identity.Token, a identity.Attempt, admit func(live int) error) error {
	var refused error
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var username string
		if err := tx.QueryRow(ctx, `SELECT username FROM users WHERE id = $1 FOR NO KEY UPDATE`, t.UserID).Scan(&username); err != nil {
			return notFound(err, "lock user")
		}
		// A statement of its own after the lock: it reads what the logins before it committed.
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2`,
			t.UserID, t.CreatedAt).Scan(&live); err != nil {
			return fmt.Errorf("count live tokens: %w", err)
		}
		if admit != nil {
			if refused = admit(live); refused != nil {
				return forgiveAttempt(ctx, tx, a)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tokens (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			t.ID, t.UserID, t.CreatedAt, t.ExpiresAt); err != nil {
			return fmt.Errorf("insert token: %w", err)
		}
		if err := forgiveAttempt(ctx, tx, a); err != nil {
			return err
		}
		return s.publish(ctx, tx, &eventsv1.LoginSucceeded{
			UserId: t.UserID, Username: username, ClientAddress: a.ClientAddress, TokenId: t.ID,
		})
	})
	if err != nil {
		return err
	}
	return refused
}

// ValidToken reports whether id is an existing, unexpired, unrevoked token of an enabled user,
// and that user's account (id, username, role).
func (s *Store) ValidToken(ctx context.Context, id string, now time.Time) (authn.Account, bool, error) {
	var a authn.Account
	err := s.pool.QueryRow(ctx, `SELECT u.id::text, u.username, u.role, t.expires_at FROM tokens t JOIN users u ON u.id = t.user_id
		WHERE t.id = $1 AND t.revoked_at IS NULL AND t.expires_at > $2 AND NOT u.disabled`, id, now).Scan(&a.ID, &a.Name, &a.Role, &a.Expires)
	if err == pgx.ErrNoRows {
		return authn.Account{}, false, nil
	}
	if err != nil {
		return authn.Account{}, false, fmt.Errorf("select token: %w", err)
	}
	return a, true, nil
}

// RevokeToken revokes one live token and records token.revoked; an unknown or already revoked
// token changes nothing.
func (s *Store) RevokeToken(ctx context.Context, id string, reason identity.RevokeReason) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var userID string
		err := tx.QueryRow(ctx, `UPDATE tokens SET revoked_at = now(), revoke_reason = $2
			WHERE id = $1 AND revoked_at IS NULL RETURNING user_id::text`, id, reason.String()).Scan(&userID)
		if err == pgx.ErrNoRows {
			return nil
		}
		if err != nil {
			return fmt.Errorf("revoke token: %w", err)
		}
		return s.publish(ctx, tx, revokedEvent(id, userID, reason))
	})
}

// revokeUserTokens revokes every live token of a user inside tx, one event per token, so that
// every cache holding any of them drops it, and records user.access_revoked once, even when
// the user held no live token: credentials other services issued to the user (vagrant-server's
// login tokens) end with it, and a user who had signed out has no token.revoked to carry it.
func (s *Store) revokeUserTokens(ctx context.Context, tx pgx.Tx, userID string, reason identity.RevokeReason) (int, error) {
	rows, err := tx.Query(ctx, `UPDATE tokens SET revoked_at = now(), revoke_reason = $2
		WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now() RETURNING id`, userID, reason.String())
	if err != nil {
		return 0, fmt.Errorf("revoke tokens: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("revoke tokens: %w", err)
	}
	for _, id := range ids {
		if err := s.publish(ctx, tx, revokedEvent(id, userID, reason)); err != nil {
			return 0, err
		}
	}
	if err := s.publish(ctx, tx, &eventsv1.UserAccessRevoked{UserId: userID, Reason: revocationReason(reason)}); err != nil {
		return 0, err
	}
	return len(ids), nil
}

func revokedEvent(tokenID, userID string, r identity.RevokeReason) *eventsv1.TokenRevoked {
	return &eventsv1.TokenRevoked{TokenId: tokenID, UserId: userID, Reason: revocationReason(r)}
}

// revocationReason is r as the events publish it.
func revocationReason(r identity.RevokeReason) eventsv1.TokenRevocationReason {
	return map[identity.RevokeReason]eventsv1.TokenRevocationReason{
		identity.RevokeLogout:          eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_LOGOUT,
		identity.RevokePasswordChanged: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED,
		identity.RevokeUserDisabled:    eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED,
		identity.RevokeAdmin:           eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN,
		// An admin changed the role; the event's reasons predate roles (the row keeps
		// "role_changed").
		identity.RevokeRoleChanged: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN,
	}[r]
}

// Purge deletes tokens that expired or were revoked before cutoff (no cache can hold them any
// longer) and failure counters idle since before forgetBefore.
func (s *Store) Purge(ctx context.Context, cutoff, forgetBefore time.Time) (int64, error) {
	var n int64
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM tokens WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
		if err != nil {
			return fmt.Errorf("purge tokens: %w", err)
		}
		n = tag.RowsAffected()
		tag, err = tx.Exec(ctx, `DELETE FROM login_failures WHERE last_failure_at < $1`, forgetBefore)
		if err != nil {
			return fmt.Errorf("purge login failures: %w", err)
		}
		n += tag.RowsAffected()
		return nil
	})
	return n, err
}
