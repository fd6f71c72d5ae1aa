package tokens

import (
	"context"
	"encoding/hex"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// Caller is who a call's accepted login token speaks for.
type Caller struct {
	// TokenID is the token's random token_id.
	TokenID []byte
	// Role is what the token may call on the Vagrant API (authz.Check).
	Role authz.Role
	// Owner names whom the token belongs to: "user:<id>" for a Plinth user's (a session
	// token, or a token an admin's session made), else the token it was made with
	// ("token:<hex token_id>", "bootstrap" for the first).
	Owner string
	// PlinthTokenID is, for a session token, the id of the Plinth token it is bound to: its
	// calls end when auth revokes that token. Empty for other login tokens.
	PlinthTokenID string
	// UserID is the Plinth user of a session token, or of a token a Plinth user made.
	UserID string
}

// LifetimeKey names what ends this caller's calls (authn.Lifetimes): a session token's Plinth
// token, a token a Plinth user owns ("user:<id>", ended with the user's access); "" for the
// others, which nothing revokes.
func (c Caller) LifetimeKey() string {
	switch {
	case c.PlinthTokenID != "":
		return c.PlinthTokenID
	case c.UserID != "":
		return UserKey(c.UserID)
	}
	return ""
}

// UserKey is the lifetime key of the tokens Plinth user id owns.
func UserKey(id string) string { return "user:" + id }

// Registrant is who a runner id this caller registers belongs to: a Plinth user's (their
// session tokens are reissued every hour, so binding the id to one would strand the runner
// at the next), else the login token's own.
func (c Caller) Registrant() string {
	if c.UserID != "" {
		return "user:" + c.UserID
	}
	return "token:" + hex.EncodeToString(c.TokenID)
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller the guard put into ctx.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
