package identity

import (
	"context"
	"errors"
)

// AddUser creates a user after validating the username and password.
func (s *Service) AddUser(ctx context.Context, username, password string) error {
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
	_, err = s.store.CreateUser(ctx, username, h)
	return err
}

// ChangePassword sets a new password and revokes all the user's tokens.
func (s *Service) ChangePassword(ctx context.Context, username, password string) error {
	if err := ValidatePassword(password); err != nil {
		return err
	}
	u, err := s.store.UserByName(ctx, username)
	if err != nil {
		return err
	}
	h, err := HashPassword(password, s.opts.Hash)
	if err != nil {
		return err
	}
	return s.store.SetPassword(ctx, u.ID, h, true)
}

// SetDisabled disables (revoking every token) or re-enables a user.
func (s *Service) SetDisabled(ctx context.Context, username string, disabled bool) (User, error) {
	if username == "" {
		return User{}, &FieldError{Field: "username", Reason: "is required"}
	}
	return s.store.SetDisabled(ctx, username, disabled)
}

// ListUsers returns every user, ordered by username.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) { return s.store.ListUsers(ctx) }

// RevokeTokens revokes every live token of a user and returns how many.
func (s *Service) RevokeTokens(ctx context.Context, username string) (int, error) {
	u, err := s.store.UserByName(ctx, username)
	if err != nil {
		return 0, err
	}
	return s.store.RevokeUserTokens(ctx, u.ID, RevokeAdmin)
}

// IsFieldError reports whether err is a validation error and returns it.
func IsFieldError(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}
