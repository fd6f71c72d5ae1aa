package identity

import (
	"context"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// User is an account that can log in.
type User struct {
	ID           string
	Username     string
	PasswordHash string
	Disabled     bool
	Role         authz.Role
	Admin        bool // Role is authz.Admin (kept for the API's admin field)
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Token is an issued bearer token as stored: never the token itself, only its ID.
type Token struct {
	ID        string // TokenID(token)
	UserID    string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// RevokeReason says why tokens were revoked; it travels in the token.revoked event.
type RevokeReason int

// Reasons for revoking tokens.
const (
	RevokeLogout RevokeReason = iota + 1
	RevokePasswordChanged
	RevokeUserDisabled
	RevokeAdmin
	// RevokeRoleChanged: the user's role changed, so tokens carrying the old one must go.
	RevokeRoleChanged
)

// String is the reason's stable name, used in logs and CLI output.
func (r RevokeReason) String() string {
	switch r {
	case RevokeLogout:
		return "logout"
	case RevokePasswordChanged:
		return "password_changed"
	case RevokeUserDisabled:
		return "user_disabled"
	case RevokeAdmin:
		return "admin"
	case RevokeRoleChanged:
		return "role_changed"
	}
	return "unknown"
}

// LoginFailure says why a login failed, for the login.failed event. It is never sent to the
// client (which gets one message for all of them, so usernames cannot be enumerated).
type LoginFailure int

// Reasons a login fails.
const (
	FailureUnknownUser LoginFailure = iota + 1
	FailureWrongPassword
	FailureDisabled
	FailureLocked
	FailureInvalid
)

// Attempt is one login attempt as the store records it.
type Attempt struct {
	Username      string // as typed
	ClientAddress string // "" when unknown
	At            time.Time
}

// Store persists users, tokens and failure counters. Every method that changes state writes
// the events it causes in the same transaction (outbox).
type Store interface {
	CreateUser(ctx context.Context, username, passwordHash string, role authz.Role) (User, error)
	UserByName(ctx context.Context, username string) (User, error)
	UserByID(ctx context.Context, id string) (User, error)
	ListUsers(ctx context.Context) ([]User, error)
	// UsersAfter returns at most limit users whose lowercase username sorts after after,
	// ordered by lowercase username.
	UsersAfter(ctx context.Context, after string, limit int) ([]User, error)
	// UpdateUser locks the enabled admins and the user called username (ErrNotFound: none),
	// passes them to update (ChangeRole decides a role change) and writes exactly the change
	// it returns; it returns the user as written. An error from update is returned as it is,
	// and nothing is written.
	UpdateUser(ctx context.Context, username string, update func(before UserState) (UserChange, error)) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// SetPassword stores a new hash; with revoke it also revokes all the user's tokens.
	SetPassword(ctx context.Context, userID, passwordHash string, revoke bool) error
	// SetDisabled flips the flag; disabling revokes all the user's tokens.
	SetDisabled(ctx context.Context, username string, disabled bool) (User, error)
	// RevokeUserTokens revokes every live token of the user and returns how many.
	RevokeUserTokens(ctx context.Context, userID string, reason RevokeReason) (int, error)

	// CreateToken stores a token issued by a successful login, records the success (resetting
	// the username's failure counter, taking back the attempt's address count) and its event.
	// First, holding a lock of the user that every CreateToken of the user takes (on any
	// replica), it counts the user's live tokens at t.CreatedAt — unexpired, unrevoked — and
	// asks admit (nil: admit all): when admit refuses, the store keeps no token and records no
	// success event but still takes the attempt back (the password was right), and returns
	// admit's error.
	CreateToken(ctx context.Context, t Token, a Attempt, admit func(live int) error) error
	// ValidToken reports whether id is an existing, unexpired, unrevoked token of an enabled
	// user, and that user's account.
	ValidToken(ctx context.Context, id string, now time.Time) (a authn.Account, ok bool, err error)
	// RevokeToken revokes one token; revoking a revoked or unknown token is not an error.
	RevokeToken(ctx context.Context, id string, reason RevokeReason) error

	// BeginAttempt locks the failure counters of the attempt's (username, address) pair and,
	// when the address is known, of the address (a missing one as a new Counter), passes them
	// to count and writes exactly the counters it returns, before the password is checked
	// (LockoutPolicy.Count decides). An error from count is returned as it is, and nothing is
	// written.
	BeginAttempt(ctx context.Context, a Attempt, count func(before Counters) (Counters, error)) error
	// RecordFailure writes the login.failed event for an attempt already counted.
	RecordFailure(ctx context.Context, a Attempt, why LoginFailure) error
	// ClearUserThrottles deletes the counters of every pair of the username; it returns how many.
	ClearUserThrottles(ctx context.Context, username string) (int64, error)
	// ClearAddressThrottles deletes the counters of the address and its pairs; it returns how many.
	ClearAddressThrottles(ctx context.Context, addr string) (int64, error)

	// Purge deletes tokens expired or revoked before cutoff and counters idle since before
	// forgetBefore, returning how many rows went.
	Purge(ctx context.Context, cutoff, forgetBefore time.Time) (int64, error)
}
