package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// SaveSignInState stores a sign-in begun at a provider (only the state's hash is its key).
func (s *Store) SaveSignInState(ctx context.Context, st identity.SignInState) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO oidc_states (id, provider, nonce, code_verifier, redirect_uri, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, st.ID, st.Provider, st.Nonce, st.CodeVerifier, st.RedirectURI, st.CreatedAt, st.ExpiresAt)
	if err != nil {
		return fmt.Errorf("insert sign-in state: %w", err)
	}
	return nil
}

// TakeSignInState deletes the state id and returns it: one statement, so two callbacks racing
// with the same state on any replicas cannot both take it.
func (s *Store) TakeSignInState(ctx context.Context, id string) (identity.SignInState, error) {
	st := identity.SignInState{ID: id}
	err := s.pool.QueryRow(ctx, `DELETE FROM oidc_states WHERE id = $1
		RETURNING provider, nonce, code_verifier, redirect_uri, created_at, expires_at`, id).
		Scan(&st.Provider, &st.Nonce, &st.CodeVerifier, &st.RedirectURI, &st.CreatedAt, &st.ExpiresAt)
	if err != nil {
		return identity.SignInState{}, notFound(err, "take sign-in state")
	}
	return st, nil
}

// usernameTries is how many usernames a new provider's user is tried under: the wanted one,
// then it with a random suffix.
const usernameTries = 5

// SignInExternal finds (or creates) the user of the provider's subject under its lock, reads
// the user's live tokens, passes both to finish and writes exactly what it returns: the role,
// the revocations, the token and the events.
func (s *Store) SignInExternal(ctx context.Context, ext identity.ExternalIdentity, finish func(before identity.ExternalState) (identity.ExternalChange, error)) (identity.User, identity.ExternalChange, error) {
	var after identity.User
	var c identity.ExternalChange
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var before identity.ExternalState
		var err error
		before.User, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users
			WHERE oidc_provider = $1 AND oidc_subject = $2 FOR UPDATE`, ext.Provider, ext.Subject))
		if errors.Is(err, pgx.ErrNoRows) {
			before.User, before.Created, err = createExternalUser(ctx, tx, ext)
		}
		if err != nil {
			return fmt.Errorf("select user of provider %s: %w", ext.Provider, err)
		}
		rows, err := tx.Query(ctx, `SELECT id FROM tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()
			ORDER BY created_at, id FOR UPDATE`, before.User.ID)
		if err != nil {
			return fmt.Errorf("lock live tokens: %w", err)
		}
		if before.LiveTokens, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("lock live tokens: %w", err)
		}
		if c, err = finish(before); err != nil {
			return err
		}
		after = before.User
		if c.Role != before.User.Role {
			if after, err = scanUser(tx.QueryRow(ctx, `UPDATE users SET role = $2, updated_at = now() WHERE id::text = $1
				RETURNING `+userColumns, before.User.ID, string(c.Role))); err != nil {
				return fmt.Errorf("update role: %w", err)
			}
		}
		if len(c.Revoked) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = now(), revoke_reason = $3
				WHERE user_id::text = $1 AND id = ANY($2) AND revoked_at IS NULL`, before.User.ID, c.Revoked, c.Reason.String()); err != nil {
				return fmt.Errorf("revoke tokens: %w", err)
			}
		}
		if t := c.Token; t != nil {
			if t.UserID != before.User.ID {
				return fmt.Errorf("store: a token of user %s cannot end a sign-in of %s", t.UserID, before.User.ID)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO tokens (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
				t.ID, t.UserID, t.CreatedAt, t.ExpiresAt); err != nil {
				return fmt.Errorf("insert token: %w", err)
			}
		}
		return s.publish(ctx, tx, c.Events...)
	})
	if err != nil {
		return identity.User{}, identity.ExternalChange{}, err
	}
	return after, c, nil
}

// createExternalUser inserts the provider's user under ext.Username or, when another user
// (local or not) has it, under a shortened one with a random suffix; each try in a savepoint,
// so a taken name does not abort the transaction. When a sign-in of the same person on
// another replica created the user first, that user is returned, locked (created false):
// the insert waits for the other transaction and does nothing.
func createExternalUser(ctx context.Context, tx pgx.Tx, ext identity.ExternalIdentity) (u identity.User, created bool, err error) {
	name := ext.Username
	for try := 0; ; try++ {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return identity.User{}, false, err
		}
		u, err := scanUser(sp.QueryRow(ctx, `INSERT INTO users (username, password_hash, role, oidc_provider, oidc_subject)
			VALUES ($1, '', $2, $3, $4)
			ON CONFLICT (oidc_provider, oidc_subject) WHERE oidc_provider IS NOT NULL DO NOTHING
			RETURNING `+userColumns, name, string(ext.Role), ext.Provider, ext.Subject))
		if errors.Is(err, pgx.ErrNoRows) {
			_ = sp.Rollback(ctx)
			u, err := scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users
				WHERE oidc_provider = $1 AND oidc_subject = $2 FOR UPDATE`, ext.Provider, ext.Subject))
			return u, false, err
		}
		if err == nil {
			return u, true, sp.Commit(ctx)
		}
		_ = sp.Rollback(ctx)
		if !isUniqueViolation(err) || try == usernameTries-1 {
			return identity.User{}, false, fmt.Errorf("insert user: %w", err)
		}
		suffix := make([]byte, 3)
		if _, err := rand.Read(suffix); err != nil {
			return identity.User{}, false, err
		}
		name = ext.Username[:min(len(ext.Username), 17)] + "-" + hex.EncodeToString(suffix)
	}
}
