package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

const userColumns = `id::text, username, password_hash, disabled, role, created_at, updated_at`

func scanUser(row pgx.Row) (identity.User, error) {
	var u identity.User
	err := row.Scan(&u.ID, &u.Username, &u.PasswordHash, &u.Disabled, &u.Role, &u.CreatedAt, &u.UpdatedAt)
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

// UserByName finds a user by case-insensitive username.
func (s *Store) UserByName(ctx context.Context, username string) (identity.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1)`, username))
	if err != nil {
		return identity.User{}, notFound(err, "select user")
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
// than deadlock) and then the user's, passes them to update and writes the change it returns.
// Two admins demoting each other at once thus see each other: they cannot both succeed and
// leave nobody able to administer users.
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
		before, err := scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1) FOR UPDATE`, username))
		if err != nil {
			return notFound(err, "select user")
		}
		c, err := update(identity.UserState{User: before, EnabledAdmins: len(admins)})
		if err != nil {
			return err
		}
		after, err = s.saveUser(ctx, tx, before, c)
		return err
	})
	if err != nil {
		return identity.User{}, err
	}
	return after, nil
}

// saveUser writes c over before, which was loaded under the lock: the role and the disabled
// flag when either differs (stamping updated_at), then the revocation of the user's tokens c
// asks for. It returns the user as stored.
func (s *Store) saveUser(ctx context.Context, tx pgx.Tx, before identity.User, c identity.UserChange) (identity.User, error) {
	after := before
	if c.User.ID != before.ID {
		return after, fmt.Errorf("store: a change of user %s cannot be saved over %s", c.User.ID, before.ID)
	}
	if c.User.Role != before.Role || c.User.Disabled != before.Disabled {
		var err error
		after, err = scanUser(tx.QueryRow(ctx, `UPDATE users SET role = $2, disabled = $3, updated_at = now()
			WHERE id::text = $1 RETURNING `+userColumns, before.ID, string(c.User.Role), c.User.Disabled))
		if err != nil {
			return after, fmt.Errorf("update user: %w", err)
		}
	}
	if c.Revoke != 0 {
		if _, err := s.revokeUserTokens(ctx, tx, before.ID, c.Revoke); err != nil {
			return after, err
		}
	}
	return after, nil
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

// SetPassword stores a new hash and, with revoke, revokes every live token of the user.
func (s *Store) SetPassword(ctx context.Context, userID, passwordHash string, revoke bool) error {
	return pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`, userID, passwordHash)
		if err != nil {
			return fmt.Errorf("update password: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return identity.ErrNotFound
		}
		if !revoke {
			return nil
		}
		_, err = s.revokeUserTokens(ctx, tx, userID, identity.RevokePasswordChanged)
		return err
	})
}

// SetDisabled sets the disabled flag; disabling revokes every live token of the user.
func (s *Store) SetDisabled(ctx context.Context, username string, disabled bool) (identity.User, error) {
	var u identity.User
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users SET disabled = $2, updated_at = now()
			WHERE lower(username) = lower($1) RETURNING `+userColumns, username, disabled))
		if err != nil {
			return notFound(err, "update user")
		}
		if disabled {
			_, err = s.revokeUserTokens(ctx, tx, u.ID, identity.RevokeUserDisabled)
		}
		return err
	})
	return u, err
}

// RevokeUserTokens revokes every live token of the user.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string, reason identity.RevokeReason) (int, error) {
	var n int
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		n, err = s.revokeUserTokens(ctx, tx, userID, reason)
		return err
	})
	return n, err
}
