package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

var (
	_ tokens.GrantStore       = (*Store)(nil)
	_ tokens.UserGrantRevoker = (*Store)(nil)
)

// AddGrant implements tokens.GrantStore.
func (s *Store) AddGrant(ctx context.Context, g tokens.Grant, admit func(live int) error) error {
	var userID, expires any
	if g.UserID != "" {
		userID = g.UserID
	}
	if !g.ExpiresAt.IsZero() {
		expires = g.ExpiresAt
	}
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := admitToken(ctx, tx, g.Owner, g.UserID, admit); err != nil {
			return err
		}
		// Under the owner's lock, which RevokeUserGrants takes too: a token read valid before
		// its owner's revocation was written makes nothing once it is.
		var makerRevoked bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM token_grants WHERE token_id = $1 AND revoked_at IS NOT NULL)`,
			g.IssuedBy).Scan(&makerRevoked); err != nil {
			return fmt.Errorf("read token maker: %w", err)
		}
		if makerRevoked {
			return fmt.Errorf("%w: its owner's access was revoked", tokens.ErrInvalid)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO token_grants (token_id, invite, role, owner, user_id, issued_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, g.TokenID, g.Invite, string(g.Role), g.Owner, userID, g.IssuedBy, expires); err != nil {
			return fmt.Errorf("insert token grant: %w", err)
		}
		return nil
	})
}

// Grant implements tokens.GrantStore.
func (s *Store) Grant(ctx context.Context, id []byte) (tokens.Grant, error) {
	g := tokens.Grant{TokenID: id}
	var role string
	var userID *string
	err := s.pool.QueryRow(ctx, `SELECT invite, role, owner, user_id, issued_by, revoked_at IS NOT NULL FROM token_grants WHERE token_id = $1`, id).
		Scan(&g.Invite, &role, &g.Owner, &userID, &g.IssuedBy, &g.Revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return tokens.Grant{}, tokens.ErrUnknownGrant
	}
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("select token grant: %w", err)
	}
	// The table's CHECK admits only roles authz knows; one it did not would allow nothing.
	g.Role, _ = authz.ParseRole(role)
	if userID != nil {
		g.UserID = *userID
	}
	return g, nil
}

// RevokeUserGrants implements tokens.UserGrantRevoker. Besides the user's grants made before
// at, it revokes those made since with one of them, however deep: the user's tokens work until
// this write, so an invite converted or a token made between auth's event and the write is
// newer than at. It holds the owner's lock AddGrant takes, and its statement reads after the
// lock: a grant committed before is revoked, and one after finds its maker revoked.
func (s *Store) RevokeUserGrants(ctx context.Context, userID string, at time.Time) (int64, error) {
	var n int64
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockOwner(ctx, tx, tokens.UserOwner(userID)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `WITH RECURSIVE ended AS (
				SELECT token_id FROM token_grants WHERE user_id = $1 AND created_at <= $2
				UNION
				SELECT g.token_id FROM token_grants g JOIN ended e ON g.issued_by = e.token_id WHERE g.user_id = $1
			)
			UPDATE token_grants SET revoked_at = now()
			WHERE token_id IN (SELECT token_id FROM ended) AND revoked_at IS NULL`, userID, at)
		if err != nil {
			return fmt.Errorf("revoke token grants: %w", err)
		}
		n = tag.RowsAffected()
		return nil
	})
	return n, err
}
