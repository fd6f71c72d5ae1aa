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

// SetRole gives the user role and, when it changes, revokes every live token of the user (one
// token.revoked event each) in the same transaction. The enabled admins' rows are locked first
// (in id order, so concurrent changes queue rather than deadlock): two admins demoting each
// other at once cannot both succeed and leave nobody able to administer users.
func (s *Store) SetRole(ctx context.Context, username string, role authz.Role) (identity.User, error) {
	var u identity.User
	err := pg.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id::text FROM users WHERE role = 'admin' AND NOT disabled ORDER BY id FOR UPDATE`)
		if err != nil {
			return fmt.Errorf("lock admins: %w", err)
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("lock admins: %w", err)
		}
		u, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1) FOR UPDATE`, username))
		if err != nil {
			return notFound(err, "select user")
		}
		if u.Role == role {
			return nil
		}
		if u.Role == authz.Admin && !u.Disabled && len(admins) <= 1 {
			return identity.ErrLastAdmin
		}
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users SET role = $2, updated_at = now()
			WHERE id::text = $1 RETURNING `+userColumns, u.ID, string(role)))
		if err != nil {
			return fmt.Errorf("update role: %w", err)
		}
		_, err = s.revokeUserTokens(ctx, tx, u.ID, identity.RevokeRoleChanged)
		return err
	})
	if err != nil {
		return identity.User{}, err
	}
	return u, nil
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
