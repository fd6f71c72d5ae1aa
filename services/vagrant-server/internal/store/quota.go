package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// admitToken asks admit (nil: admit all) whether owner may have one more token, holding the
// owner's advisory lock until tx ends: every new token of an owner — session token, login
// token or invite, on any replica — takes it before counting, so tokens racing for the last
// places never take more than there are. The count, a statement of its own after the lock,
// sees every token committed before: the owner's unrevoked grants that have not expired
// (login tokens never do; invites recorded before their expiry was are not counted) and, for
// a Plinth user (userID set), their unrevoked, unexpired session tokens.
func admitToken(ctx context.Context, tx pgx.Tx, owner, userID string, admit func(live int) error) error {
	if err := lockOwner(ctx, tx, owner); err != nil {
		return err
	}
	if admit == nil {
		return nil
	}
	var live int
	if err := tx.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM token_grants WHERE owner = $1 AND revoked_at IS NULL
			AND (expires_at > now() OR (expires_at IS NULL AND NOT invite)))
		+ (SELECT count(*) FROM session_tokens WHERE $2 <> '' AND user_id = $2 AND revoked_at IS NULL AND expires_at > now())`,
		owner, userID).Scan(&live); err != nil {
		return fmt.Errorf("count live tokens: %w", err)
	}
	return admit(live)
}

// lockOwner takes owner's advisory lock until tx ends: new tokens of the owner and the
// revocation of a user's grants (RevokeUserGrants) queue behind each other.
func lockOwner(ctx context.Context, tx pgx.Tx, owner string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vagrant.tokens.owner:' || $1, 0))`, owner); err != nil {
		return fmt.Errorf("lock token owner: %w", err)
	}
	return nil
}
