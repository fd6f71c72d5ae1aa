package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

var (
	_ sessions.Store            = (*Store)(nil)
	_ sessions.RevocationWriter = (*Store)(nil)
)

// lockPlinthToken serializes, per Plinth token, recording a session token and recording the
// Plinth token's revocation: whichever commits second sees the other (READ COMMITTED reads
// afresh at each statement after the lock), so no session token outlives its revocation.
func lockPlinthToken(ctx context.Context, tx pgx.Tx, plinthTokenID string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vagrant.session:' || $1, 0))`, plinthTokenID); err != nil {
		return fmt.Errorf("lock plinth token: %w", err)
	}
	return nil
}

// AddSessionToken implements sessions.Store.
// The owner's lock comes first, the Plinth token's second, as nothing takes them the other
// way round.
func (s *Store) AddSessionToken(ctx context.Context, t sessions.Token, admit func(live int) error) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := admitToken(ctx, tx, tokens.UserOwner(t.UserID), t.UserID, admit); err != nil {
			return err
		}
		if err := lockPlinthToken(ctx, tx, t.PlinthTokenID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO session_tokens (token_id, plinth_token_id, user_id, username, role, expires_at)
			SELECT $1, $2, $3, $4, $5, $6
			WHERE NOT EXISTS (SELECT 1 FROM revoked_plinth_tokens WHERE plinth_token_id = $2)`,
			t.ID, t.PlinthTokenID, t.UserID, t.Username, string(t.Role), t.ExpiresAt)
		if err != nil {
			return fmt.Errorf("insert session token: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return sessions.ErrSessionEnded
		}
		return nil
	})
}

// SessionToken implements sessions.Store.
func (s *Store) SessionToken(ctx context.Context, id []byte) (sessions.Token, error) {
	t := sessions.Token{ID: id}
	var role string
	var revoked *time.Time
	err := s.pool.QueryRow(ctx, `SELECT plinth_token_id, user_id, username, role, expires_at, revoked_at
		FROM session_tokens WHERE token_id = $1`, id).Scan(&t.PlinthTokenID, &t.UserID, &t.Username, &role, &t.ExpiresAt, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Token{}, sessions.ErrUnknown
	}
	if err != nil {
		return sessions.Token{}, fmt.Errorf("select session token: %w", err)
	}
	// A role the table holds but authz does not know (none is written) allows nothing.
	t.Role, _ = authz.ParseRole(role)
	if revoked != nil {
		t.RevokedAt = *revoked
	}
	return t, nil
}

// RevokePlinthToken implements sessions.RevocationWriter.
func (s *Store) RevokePlinthToken(ctx context.Context, plinthTokenID, reason string) (int64, error) {
	var n int64
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockPlinthToken(ctx, tx, plinthTokenID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO revoked_plinth_tokens (plinth_token_id, reason) VALUES ($1, $2)
			ON CONFLICT (plinth_token_id) DO NOTHING`, plinthTokenID, reason); err != nil {
			return fmt.Errorf("insert revoked plinth token: %w", err)
		}
		tag, err := tx.Exec(ctx, `UPDATE session_tokens SET revoked_at = now()
			WHERE plinth_token_id = $1 AND revoked_at IS NULL`, plinthTokenID)
		if err != nil {
			return fmt.Errorf("revoke session tokens: %w", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}

// PurgeSessionTokens implements sessions.Store.
func (s *Store) PurgeSessionTokens(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := tx.Exec(ctx, `DELETE FROM session_tokens WHERE expires_at < $1`, before)
		if err != nil {
			return fmt.Errorf("purge session tokens: %w", err)
		}
		b, err := tx.Exec(ctx, `DELETE FROM revoked_plinth_tokens WHERE revoked_at < $1`, before)
		if err != nil {
			return fmt.Errorf("purge revoked plinth tokens: %w", err)
		}
		n = a.RowsAffected() + b.RowsAffected()
		return nil
	})
	return n, err
}
