// Package authn verifies Plinth bearer tokens on incoming gRPC calls: it asks the auth service
// (CheckToken), caches positive answers briefly, forgets a token the moment auth publishes its
// revocation, and puts the caller's account into the context.
package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// The metadata keys naming an account: auth's CheckToken answers with them as response headers
// for a valid token (the upstream wire message carries only `success`), and the gateway and
// Envoy's ext_authz set them on the calls they forward to backends, from the verified token,
// after dropping any copy the client sent.
const (
	// AccountHeader carries the user's id.
	AccountHeader = "plinth-account-id"
	// NameHeader carries the username.
	NameHeader = "plinth-account-name"
	// RoleHeader carries the user's role (authz.Role).
	RoleHeader = "plinth-account-role"
	// ExpiresHeader carries when the checked token expires (RFC 3339, UTC). Only auth's
	// CheckToken answers with it — a service that binds something to the caller's session
	// (vagrant-server's session tokens) must not outlive the token; the gateway forwards no copy.
	ExpiresHeader = "plinth-token-expires"
)

// Upstream's messages (koor data-control-center), kept so its web UI behaves the same.
const (
	MsgNoToken      = "no token given, please login!"
	MsgInvalidToken = "invalid token! Please login again."
)

// MsgAuthUnavailable answers a call whose token could not be checked because auth is
// unreachable (Unavailable: retry, don't log in again).
const MsgAuthUnavailable = "authentication service unavailable, retry"

// BearerToken returns the token of the incoming call's `authorization: Bearer <token>`
// metadata, or "" when there is none.
func BearerToken(ctx context.Context) string {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ""
	}
	for _, v := range md.Get("authorization") {
		scheme, token, found := strings.Cut(strings.TrimSpace(v), " ")
		if found && strings.EqualFold(scheme, "bearer") {
			if t := strings.TrimSpace(token); t != "" {
				return t
			}
		}
	}
	return ""
}

// TokenID is how a token is named everywhere but on the wire: the hex SHA-256 of the token. The
// auth service stores it, token.revoked events carry it, and caches are keyed by it, so the
// token itself never sits in a database, a log or an event.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Account is the authenticated caller.
type Account struct {
	// ID is the user's id (a UUID).
	ID string
	// Name is the username, for audit trails (events' actor).
	Name string
	// Role is what the user may call (authz.Check).
	Role authz.Role
	// Expires is when the checked token stops being accepted; zero when auth did not say (an
	// auth older than the header).
	Expires time.Time
}

type accountKey struct{}

// WithAccount returns ctx carrying a.
func WithAccount(ctx context.Context, a Account) context.Context {
	return context.WithValue(ctx, accountKey{}, a)
}

// AccountFrom returns the account the interceptor put into ctx.
func AccountFrom(ctx context.Context) (Account, bool) {
	a, ok := ctx.Value(accountKey{}).(Account)
	return a, ok
}
