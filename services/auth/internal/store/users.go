package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

const userColumns = `id::text, username, password_hash, disabled, role, created_at, updated_at, coalesce(oidc_provider, '')`

func scanUser(row pgx.Row) (identity.User, error) {
	var u identity.User
	err := row.Scan(&u.ID, &u.Username, &u.PasswordHash, &u.Disabled, &u.Role, &u.CreatedAt, &u.UpdatedAt, &u.Provider)
	u.Admin = u.Role == authz.Admin
	return u, err
}

// CreateUser inserts a user; a case-insensitively equal username is identity.ErrExists.
func (s *Store) CreateUser(ctx context.Context, username, passwordHash string, role authz.Role) (identity.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx,
		`INSERT INTO users (username, password_hash, role) VALUES ($1, $2, $3) RETURNING `+userColumns, username, passwordHash, string(role)))
	if isUniqueViolation(err) {
		return identity.User{}, identity.ErrExists
	}
	if err != nil {
		return identity.User{}, fmt.Errorf("insert user: %w", err)
	}
	return u, nil
}

// UserByID finds a user by id; an id that is not a UUID is simply not found.
func (s *Store) UserByID(ctx context.Context, id string) (identity.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id::text = $1`, id))
	if err != nil {
		return identity.User{}, notFound(err, "select user")
	}
	return u, nil
}

// UsersAfter returns at most limit users whose lowercase username sorts after after ("" for
// the first page), ordered by lowercase username: keyset paging on users_username_lower.
func (s *Store) UsersAfter(ctx context.Context, after string, limit int) ([]identity.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) > $1
		ORDER BY lower(username) LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.User, error) { return scanUser(r) })
}

// UpdateUser locks the enabled admins' rows (in id order, so concurrent changes queue rather
// than deadlock), then the user's and the user's live tokens, passes them to update and
// writes exactly the change it returns. Two admins demoting each other at once thus see each
// other: they cannot both succeed and leave nobody able to administer users. The user's lock
// (FOR UPDATE) also waits for the user's logins in flight (FinishLogin), so the live tokens
// update sees are all there are.
func (s *Store) UpdateUser(ctx context.Context, username string, update func(before identity.UserState) (identity.UserChange, error)) (identity.User, error) {
	var after identity.User
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id::text FROM users WHERE role = 'admin' AND NOT disabled ORDER BY id FOR UPDATE`)
		if err != nil {
			return fmt.Errorf("lock admins: %w", err)
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("lock admins: %w", err)
		}
		before := identity.UserState{EnabledAdmins: len(admins)}
		before.User, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1) FOR UPDATE`, username))
		if err != nil {
			return notFound(err, "select user")
		}
		rows, err = tx.Query(ctx, `SELECT id FROM tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()
			ORDER BY created_at, id FOR UPDATE`, before.User.ID)
		if err != nil {
			return fmt.Errorf("lock live tokens: %w", err)
		}
		if before.LiveTokens, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("lock live tokens: %w", err)
		}
		c, err := update(before)
		if err != nil {
			return err
		}
		after, err = s.saveUser(ctx, tx, before.User, c)
		return err
	})
	if err != nil {
		return identity.User{}, err
	}
	return after, nil
}

// saveUser writes c over before, which was loaded under the lock: the role, the disabled flag
// and the password hash when one differs (stamping updated_at), the revocation of the tokens
// c names and its events. It returns the user as stored.
func (s *Store) saveUser(ctx context.Context, tx pgx.Tx, before identity.User, c identity.UserChange) (identity.User, error) {
	after := before
	if c.User.ID != before.ID {
		return after, fmt.Errorf("store: a change of user %s cannot be saved over %s", c.User.ID, before.ID)
	}
	if c.User.Role != before.Role || c.User.Disabled != before.Disabled || c.User.PasswordHash != before.PasswordHash {
		var err error
		after, err = scanUser(tx.QueryRow(ctx, `UPDATE users SET role = $2, disabled = $3, password_hash = $4, updated_at = now()
			WHERE id::text = $1 RETURNING `+userColumns, before.ID, string(c.User.Role), c.User.Disabled, c.User.PasswordHash))
		if err != nil {
			return after, fmt.Errorf("update user: %w", err)
		}
	}
	if len(c.Revoked) > 0 {
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = now(), revoke_reason = $3
			WHERE user_id = $1 AND id = ANY($2) AND revoked_at IS NULL`, before.ID, c.Revoked, c.Reason.String())
		if err != nil {
			return after, fmt.Errorf("revoke tokens: %w", err)
		}
		if tag.RowsAffected() != int64(len(c.Revoked)) {
			return after, fmt.Errorf("store: a change of user %s revokes %d tokens, of which %d are its live ones", before.ID, len(c.Revoked), tag.RowsAffected())
		}
	}
	return after, s.publish(ctx, tx, c.Events...)
}

// ListUsers returns all users ordered by username.
func (s *Store) ListUsers(ctx context.Context) ([]identity.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY lower(username)`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.User, error) { return scanUser(r) })
}

// CountUsers returns the number of users.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, err
}
