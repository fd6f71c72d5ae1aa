package identity

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
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
	// Provider is the OpenID provider the user signs in with ("" for a local user, who signs
	// in with a password). Such a user has no password and Login refuses them.
	Provider string
}

// Token is an issued bearer token as stored: never the token itself, only its ID.
type Token struct {
	ID        string // TokenID(token)
	UserID    string
	ExpiresAt time.Time
	CreatedAt time.Time
	Revoked   bool
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

// event is r as the events publish it.
func (r RevokeReason) event() eventsv1.TokenRevocationReason {
	return map[RevokeReason]eventsv1.TokenRevocationReason{
		RevokeLogout:          eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_LOGOUT,
		RevokePasswordChanged: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED,
		RevokeUserDisabled:    eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED,
		RevokeAdmin:           eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN,
		// The event's reasons predate roles (the token row keeps "role_changed").
		RevokeRoleChanged: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN,
	}[r]
}

// Store persists users, tokens and failure counters. A method that changes what a rule
// decides takes the rule as a function of the state as stored (after kaas's Store.Update):
// the store locks that state, calls the function and writes exactly what it returned — the
// rows and the events (outbox), in one transaction — or, when the function fails, nothing,
// returning its error as it is.
type Store interface {
	CreateUser(ctx context.Context, username, passwordHash string, role authz.Role) (User, error)
	UserByID(ctx context.Context, id string) (User, error)
	ListUsers(ctx context.Context) ([]User, error)
	// UsersAfter returns at most limit users whose lowercase username sorts after after,
	// ordered by lowercase username.
	UsersAfter(ctx context.Context, after string, limit int) ([]User, error)
	// UpdateUser locks the enabled admins, the user called username (ErrNotFound: none) and
	// the user's live tokens, passes them to update (ChangeRole, ChangeDisabled,
	// NewPassword, RevokeAllTokens) and writes exactly the change it returns; it returns the
	// user as written.
	UpdateUser(ctx context.Context, username string, update func(before UserState) (UserChange, error)) (User, error)
	CountUsers(ctx context.Context) (int, error)

	// UserByName finds a user by case-insensitive username (ErrNotFound: none).
	UserByName(ctx context.Context, username string) (User, error)
	// BeginAttempt locks the failure counters of the attempt's (username, address) pair and,
	// when the address is known, of the address (a missing one as a new Counter), passes them
	// to count (LockoutPolicy.Count) and writes exactly the counters it returns, before the
	// password is checked.
	BeginAttempt(ctx context.Context, a Attempt, count func(before Counters) (Counters, error)) error
	// RecordFailure writes the login.failed event of an attempt already counted.
	RecordFailure(ctx context.Context, ev *eventsv1.LoginFailed) error
	// FinishLogin ends the attempt a of user userID whose password was right. Holding a lock
	// of the user that every FinishLogin and UpdateUser of the user takes (on any replica),
	// it reads the user's name, the number of live tokens at a.At and the attempt's counters
	// (a missing one as the zero Counter), passes them to finish (LoginSucceeded) and writes
	// exactly the change it returns: the token, the counters (the zero Counter: none), the
	// password hash, the events. It returns that change.
	FinishLogin(ctx context.Context, userID string, a Attempt, finish func(before LoginState) (LoginChange, error)) (LoginChange, error)

	// ValidToken reports whether id is an existing, unexpired, unrevoked token of an enabled
	// user, and that user's account.
	ValidToken(ctx context.Context, id string, now time.Time) (a authn.Account, ok bool, err error)
	// RevokeToken locks the token id and passes it to revoke (Logout), then writes exactly the
	// revocation and events it returns; an unknown token is not an error and changes nothing.
	RevokeToken(ctx context.Context, id string, revoke func(before Token) (TokenChange, error)) error

	// ClearUserThrottles deletes the counters of every pair of the username; it returns how many.
	ClearUserThrottles(ctx context.Context, username string) (int64, error)
	// ClearAddressThrottles deletes the counters of the address and its pairs; it returns how many.
	ClearAddressThrottles(ctx context.Context, addr string) (int64, error)

	// Purge deletes tokens expired or revoked before cutoff, counters idle since before
	// forgetBefore and sign-in states expired before cutoff, returning how many rows went.
	Purge(ctx context.Context, cutoff, forgetBefore time.Time) (int64, error)

	// SignInExternal finds the user of (ext.Provider, ext.Subject), locked, or creates them
	// (username ext.Username, or it with a suffix when taken; role ext.Role; no password),
	// reads their live tokens, passes both to finish (ExternalSignedIn) and writes exactly the
	// change it returns. It returns the user as written and the change.
	SignInExternal(ctx context.Context, ext ExternalIdentity, finish func(before ExternalState) (ExternalChange, error)) (User, ExternalChange, error)
	// SaveSignInState stores a sign-in begun at a provider.
	SaveSignInState(ctx context.Context, st SignInState) error
	// TakeSignInState deletes the state id and returns it as it was (expired or not): a state
	// is taken once. ErrNotFound when there is none (never stored, already taken, purged).
	TakeSignInState(ctx context.Context, id string) (SignInState, error)
}

// TokenChange is what the revocation of one token writes: nothing when Reason is 0, else the
// token revoked for Reason, and Events.
type TokenChange struct {
	Reason RevokeReason
	Events []proto.Message
}
