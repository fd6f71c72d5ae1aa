package authn

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Checker asks the auth service whether a token is live and whose it is (id, name, role).
type Checker interface {
	CheckToken(ctx context.Context, token string) (account Account, ok bool, err error)
}

// MaxCacheTTL bounds how long a revoked token can survive in a cache that missed the event.
const MaxCacheTTL = 30 * time.Second

// Options configure a Verifier.
type Options struct {
	// CacheTTL is how long a positive answer is reused (0 disables the cache; at most 30 s).
	CacheTTL time.Duration
	// CacheSize bounds the number of cached tokens.
	CacheSize int
	Logger    *slog.Logger
	Now       func() time.Time
}

// Verifier authenticates incoming calls by their bearer token. Its Authenticate method is the
// auth hook of libs/platform/server (a go-grpc-middleware auth.AuthFunc).
type Verifier struct {
	checker Checker
	cache   *Cache
	log     *slog.Logger
	now     func() time.Time
	ttl     time.Duration

	mu sync.Mutex
	// revoked remembers recent revocations for one cache TTL, so that a CheckToken answer that
	// was in flight when the revocation arrived cannot put the token back into the cache.
	revoked map[string]time.Time
	// calls are the calls running on a token, ended by its revocation (see Lifetimes).
	calls Lifetimes

	watching atomic.Bool
}

// NewVerifier returns a Verifier asking checker.
func NewVerifier(checker Checker, o Options) (*Verifier, error) {
	if o.CacheTTL < 0 || o.CacheTTL > MaxCacheTTL {
		return nil, errors.New("authn cache TTL must be between 0 and 30s")
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 10000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Verifier{
		checker: checker, cache: NewCache(o.CacheTTL, o.CacheSize, o.Now), log: o.Logger,
		now: o.Now, ttl: o.CacheTTL, revoked: make(map[string]time.Time),
	}, nil
}

// Authenticate checks the call's bearer token, then whether the account's role may call
// fullMethod (authz.Check), and returns a context carrying the account; it is a
// server.AuthFunc (which methods need no token is the server's AuthExempt list). No token or a
// bad token is Unauthenticated with upstream's messages; an unreachable auth service is
// Unavailable, so clients retry instead of asking the user to log in again; a role that does
// not allow the method is PermissionDenied naming the role and the method (signing in again
// will not help). A cached answer is checked the same way.
//
// The returned context ends, with ErrTokenEnded as its cause, when auth revokes the token
// while the call runs (Revoke): a stream does not outlive its token.
func (v *Verifier) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	token := BearerToken(ctx)
	if token == "" {
		return nil, status.Error(codes.Unauthenticated, MsgNoToken)
	}
	if len(token) > input.MaxToken {
		// Refused before hashing or asking auth: no Plinth token is anywhere near this long.
		return nil, status.Error(codes.Unauthenticated, MsgInvalidToken)
	}
	id := TokenID(token)
	asked := v.now()
	if a, ok := v.cache.Get(id); ok {
		return v.authorize(ctx, a, id, asked, fullMethod)
	}
	a, ok, err := v.checker.CheckToken(ctx, token)
	if err != nil {
		v.log.WarnContext(ctx, "token check failed", "token_id", id[:12], "error", err)
		return nil, status.Error(codes.Unavailable, MsgAuthUnavailable)
	}
	if !ok {
		return nil, status.Error(codes.Unauthenticated, MsgInvalidToken)
	}
	if !v.revokedSince(id, asked) {
		v.cache.Put(id, a)
	}
	return v.authorize(ctx, a, id, asked, fullMethod)
}

// authorize returns ctx carrying a, bound to token id's lifetime, when a's role may call
// fullMethod, else PermissionDenied. asked is when the token was found live.
func (v *Verifier) authorize(ctx context.Context, a Account, id string, asked time.Time, fullMethod string) (context.Context, error) {
	if err := authz.Check(a.Role, fullMethod); err != nil {
		return nil, status.Error(codes.PermissionDenied, err.Error())
	}
	ctx = v.calls.Bind(WithAccount(ctx, a), id)
	// A revocation that arrived between the check and the binding found no call to end;
	// Revoke records it before ending calls, so one of the two sees the other.
	if v.revokedSince(id, asked) {
		v.calls.End(id)
		return nil, status.Error(codes.Unauthenticated, MsgInvalidToken)
	}
	return ctx, nil
}

// Revoke forgets a token at once and ends the calls it authenticated (their contexts end with
// ErrTokenEnded); call it for every token.revoked event.
func (v *Verifier) Revoke(tokenID string) {
	now := v.now()
	v.mu.Lock()
	v.revoked[tokenID] = now
	for id, at := range v.revoked { // prune: entries older than a TTL can no longer race
		if now.Sub(at) > v.ttl+time.Second {
			delete(v.revoked, id)
		}
	}
	v.mu.Unlock()
	v.cache.Revoke(tokenID)
	if n := v.calls.End(tokenID); n > 0 {
		v.log.Info("ended calls of a revoked token", "token_id", tokenID[:min(12, len(tokenID))], "calls", n)
	}
}

func (v *Verifier) revokedSince(id string, t time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	at, ok := v.revoked[id]
	return ok && !at.Before(t)
}

// CacheLen reports how many tokens are cached (for metrics and tests).
func (v *Verifier) CacheLen() int { return v.cache.Len() }

// CallsLen reports how many calls are bound to their tokens now (for metrics and tests).
func (v *Verifier) CallsLen() int { return v.calls.Len() }
