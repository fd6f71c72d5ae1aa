package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

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

// RevokeToken locks the token id, passes it to revoke (identity.SignOut) and writes exactly
// the revocation and the events it returns; an unknown token changes nothing.
func (s *Store) RevokeToken(ctx context.Context, id string, revoke func(before identity.Token) (identity.TokenChange, error)) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		before := identity.Token{ID: id}
		err := tx.QueryRow(ctx, `SELECT user_id::text, created_at, expires_at, revoked_at IS NOT NULL FROM tokens WHERE id = $1 FOR UPDATE`,
			id).Scan(&before.UserID, &before.CreatedAt, &before.ExpiresAt, &before.Revoked)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock token: %w", err)
		}
		c, err := revoke(before)
		if err != nil {
			return err
		}
		if c.Reason != 0 {
			if _, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = now(), revoke_reason = $2 WHERE id = $1`, id, c.Reason.String()); err != nil {
				return fmt.Errorf("revoke token: %w", err)
			}
		}
		return s.publish(ctx, tx, c.Events...)
	})
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
		tag, err = tx.Exec(ctx, `DELETE FROM oidc_states WHERE expires_at < $1`, cutoff)
		if err != nil {
			return fmt.Errorf("purge sign-in states: %w", err)
		}
		n += tag.RowsAffected()
		return nil
	})
	return n, err
}
