package identity

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// ParseRole is authz.ParseRole as a *FieldError naming field "role" (the message lists the
// roles).
func ParseRole(role string) (authz.Role, error) {
	r, err := authz.ParseRole(role)
	if err != nil {
		return "", &FieldError{Field: "role", Reason: fmt.Sprintf("must be one of viewer, operator, admin (got %s)", input.Quote(role))}
	}
	return r, nil
}

// NewUserRole is the role of a user created with the API's (admin, role) pair: role when given,
// else admin for admin and operator for everyone else (what users could do before roles).
// admin with another role contradicts itself: a *FieldError naming role.
func NewUserRole(admin bool, role string) (authz.Role, error) {
	if role == "" {
		if admin {
			return authz.Admin, nil
		}
		return authz.Operator, nil
	}
	r, err := ParseRole(role)
	if err != nil {
		return "", err
	}
	if admin && r != authz.Admin {
		return "", &FieldError{Field: "role", Reason: fmt.Sprintf("is %s, but admin is set: leave admin unset or ask for role admin", r)}
	}
	return r, nil
}

// AddUser creates a user with role after validating the username, the password and the role.
func (s *Service) AddUser(ctx context.Context, username, password string, role authz.Role) (User, error) {
	if err := ValidateUsername(username); err != nil {
		return User{}, err
	}
	if err := ValidatePassword(password); err != nil {
		return User{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return User{}, err
	}
	h, err := HashPassword(password, s.opts.Hash)
	if err != nil {
		return User{}, err
	}
	return s.store.CreateUser(ctx, username, h, role)
}

// ChangePassword sets a new password and revokes all the user's tokens (NewPassword).
func (s *Service) ChangePassword(ctx context.Context, username, password string) error {
	if err := ValidateUsername(username); err != nil {
		return err
	}
	if err := ValidatePassword(password); err != nil {
		return err
	}
	h, err := HashPassword(password, s.opts.Hash)
	if err != nil {
		return err
	}
	_, err = s.store.UpdateUser(ctx, username, NewPassword(h))
	return err
}

// SetDisabled disables (revoking every token) or re-enables a user (ChangeDisabled).
func (s *Service) SetDisabled(ctx context.Context, username string, disabled bool) (User, error) {
	if username == "" {
		return User{}, &FieldError{Field: "username", Reason: "is required"}
	}
	if err := ValidateUsername(username); err != nil {
		return User{}, err
	}
	return s.store.UpdateUser(ctx, username, ChangeDisabled(disabled))
}

// SetDisabledBy is SetDisabled on behalf of the admin actor, who may not disable their own
// account: the last admin doing so would leave nobody able to undo it but the CLI.
func (s *Service) SetDisabledBy(ctx context.Context, actor User, username string, disabled bool) (User, error) {
	if disabled && NormalizeUsername(actor.Username) == NormalizeUsername(username) {
		return User{}, ErrOwnAccount
	}
	return s.SetDisabled(ctx, username, disabled)
}

// SetRole gives a user another role (a name ParseRole accepts) and, when it changes, revokes
// all their tokens so the new role applies to their next call. The last enabled admin keeps the
// role (ErrLastAdmin).
func (s *Service) SetRole(ctx context.Context, username, role string) (User, error) {
	return s.SetRoleBy(ctx, User{}, username, role)
}

// SetRoleBy is SetRole on behalf of the admin actor, who may not change their own role
// (ErrOwnRole): an admin demoting themselves could not undo it. The zero actor is the CLI.
func (s *Service) SetRoleBy(ctx context.Context, actor User, username, role string) (User, error) {
	if err := ValidateUsername(username); err != nil {
		return User{}, err
	}
	r, err := ParseRole(role)
	if err != nil {
		return User{}, err
	}
	if actor.Username != "" && NormalizeUsername(actor.Username) == NormalizeUsername(username) {
		return User{}, ErrOwnRole
	}
	return s.store.UpdateUser(ctx, username, ChangeRole(r))
}

// ListUsers returns every user, ordered by username.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) { return s.store.ListUsers(ctx) }

// usersPaging is UsersPage's paging: 50 users by default, at most 500; the token is the
// page's last lowercase username.
var usersPaging = input.Paging{Default: 50, Max: 500, MaxKey: UsernameMaxLen, Call: "ListUsers"}

// UsersPage returns a page of users ordered by username and the token of the next page ("" on
// the last).
func (s *Service) UsersPage(ctx context.Context, pageToken string, pageSize int32) ([]User, string, error) {
	size, err := usersPaging.Size(pageSize)
	if err != nil {
		return nil, "", err
	}
	after, err := usersPaging.Key(pageToken, func(k string) bool { return ValidateUsername(k) == nil })
	if err != nil {
		return nil, "", err
	}
	users, err := s.store.UsersAfter(ctx, after, size+1)
	if err != nil {
		return nil, "", err
	}
	page, next := input.Page(users, size, func(u User) string { return NormalizeUsername(u.Username) })
	return page, next, nil
}

// RevokeTokens revokes every live token of a user and returns how many (RevokeAllTokens).
func (s *Service) RevokeTokens(ctx context.Context, username string) (int, error) {
	if err := ValidateUsername(username); err != nil {
		return 0, err
	}
	var n int
	_, err := s.store.UpdateUser(ctx, username, func(before UserState) (UserChange, error) {
		c, err := RevokeAllTokens(before)
		n = len(c.Revoked)
		return c, err
	})
	return n, err
}

// Admin returns the user a bearer token belongs to (id, username, role) when that user's
// role may call fullMethod (authz.Check: user administration is the admin role's):
// ErrNoToken without a token, ErrBadToken for a token that is not live, a *RoleError
// (ErrNotAdmin) for anyone else. It asks the store every time (no cache): admin calls are
// rare and must see a revocation, a disabled account or a new role at once.
func (s *Service) Admin(ctx context.Context, token, fullMethod string) (User, error) {
	if token == "" {
		return User{}, ErrNoToken
	}
	a, ok, err := s.CheckToken(ctx, token)
	if err != nil {
		return User{}, err
	}
	if !ok {
		return User{}, ErrBadToken
	}
	if err := authz.Check(a.Role, fullMethod); err != nil {
		return User{}, &RoleError{Denied: err}
	}
	return User{ID: a.ID, Username: a.Name, Role: a.Role, Admin: a.Role == authz.Admin}, nil
}

// GeneratePassword returns a random password of 144 bits (24 base64url characters).
func GeneratePassword() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
