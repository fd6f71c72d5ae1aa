// Package sessions gives signed-in Plinth users Vagrant login tokens bound to their Plinth
// token: such a token expires no later than the Plinth token, carries the user's role (what
// it may call on the Vagrant API is authz's answer for that role), and is refused from the
// moment auth revokes the Plinth token.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

var (
	// ErrSessionEnded refuses to issue for a Plinth token auth already revoked.
	ErrSessionEnded = errors.New("your Plinth session has ended; sign in again")
	// ErrNoExpiry refuses to issue when auth did not say when the Plinth token expires (an
	// auth older than its plinth-token-expires header): the Vagrant token could outlive it.
	ErrNoExpiry = errors.New("auth did not say when your session ends, so no Vagrant token can be bound to it")
	// ErrUnknown is a Store's answer for a session token it never recorded.
	ErrUnknown = errors.New("unknown session token")
)

// Token is what the server remembers of a session token: ids, never the token.
type Token struct {
	// ID is the Vagrant token's random token_id.
	ID []byte
	// PlinthTokenID is the id of the Plinth token it is bound to (authn.TokenID).
	PlinthTokenID string
	UserID        string
	Username      string
	Role          authz.Role
	ExpiresAt     time.Time
	// RevokedAt is set once the Plinth token was revoked.
	RevokedAt time.Time
}

// Store keeps the session tokens and the Plinth tokens auth revoked.
type Store interface {
	// AddSessionToken records t, or returns ErrSessionEnded when t's Plinth token was revoked
	// — decided under the same lock as RevokePlinthToken, so a token issued while the
	// revocation arrives is either refused here or revoked there. Before, holding the lock
	// every new token of the user takes (tokens.GrantStore.AddGrant's, of owner
	// tokens.UserOwner), it counts the user's live tokens — session tokens and the grants
	// they own — and asks admit (nil: admit all); when admit refuses it records nothing and
	// returns admit's error.
	AddSessionToken(ctx context.Context, t Token, admit func(live int) error) error
	// SessionToken returns token id, or ErrUnknown.
	SessionToken(ctx context.Context, id []byte) (Token, error)
	// PurgeSessionTokens forgets session tokens that expired before, and revocations recorded
	// before, returning how many rows went.
	PurgeSessionTokens(ctx context.Context, before time.Time) (int64, error)
}

// Signer makes the Vagrant login tokens (tokens.Issuer).
type Signer interface {
	IssueExpiring(ctx context.Context, id []byte, until time.Time) (string, error)
}

// Options tune a Service.
type Options struct {
	// MaxTTL caps a token's lifetime below the Plinth token's (0: the Plinth token's expiry).
	MaxTTL time.Duration
	// Quota bounds the live tokens of one user: an issue beyond it is a *tokens.QuotaError.
	Quota tokens.Quota
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service issues and checks session tokens.
type Service struct {
	store  Store
	signer Signer
	opts   Options
}

// NewService issues tokens signed by signer and recorded in store.
func NewService(store Store, signer Signer, o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, signer: signer, opts: o}
}

// Issued is a new session token: the token (a secret) and when it expires.
type Issued struct {
	Token     string
	ExpiresAt time.Time
	Role      authz.Role
}

// Issue gives account, signed in with the Plinth token whose id is plinthTokenID, a Vagrant
// login token expiring with that Plinth token (or after MaxTTL, if sooner). A user holding
// Options.Quota's live tokens gets a *tokens.QuotaError and no token.
func (s *Service) Issue(ctx context.Context, account authn.Account, plinthTokenID string) (Issued, error) {
	now := s.opts.Now()
	if account.Expires.IsZero() {
		return Issued{}, ErrNoExpiry
	}
	until := account.Expires
	if s.opts.MaxTTL > 0 && now.Add(s.opts.MaxTTL).Before(until) {
		until = now.Add(s.opts.MaxTTL)
	}
	// Postgres keeps microseconds: the recorded expiry must not be later than the signed one.
	until = until.Truncate(time.Microsecond)
	if !until.After(now) {
		return Issued{}, ErrSessionEnded
	}
	id, err := tokens.NewTokenID()
	if err != nil {
		return Issued{}, err
	}
	t := Token{ID: id, PlinthTokenID: plinthTokenID, UserID: account.ID, Username: account.Name, Role: account.Role, ExpiresAt: until}
	if err := s.store.AddSessionToken(ctx, t, s.opts.Quota.Admit(tokens.UserOwner(account.ID), account.Name)); err != nil {
		return Issued{}, err
	}
	token, err := s.signer.IssueExpiring(ctx, id, until)
	if err != nil {
		return Issued{}, fmt.Errorf("sign the session token: %w", err)
	}
	s.opts.Logger.InfoContext(ctx, "issued a Vagrant session token", "user_id", account.ID, "username", account.Name,
		"role", string(account.Role), "expires_at", until)
	return Issued{Token: token, ExpiresAt: until, Role: account.Role}, nil
}

// Check is the tokens.SessionCheck: token id's session must be live (recorded, not revoked,
// not expired) and its role must allow method (a Vagrant method's short name). The caller is
// the session's user, with the Plinth token whose revocation ends its calls.
func (s *Service) Check(ctx context.Context, id []byte, method string) (tokens.Caller, error) {
	t, err := s.store.SessionToken(ctx, id)
	switch {
	case errors.Is(err, ErrUnknown):
		return tokens.Caller{}, fmt.Errorf("%w: an expiring login token this server never issued", tokens.ErrInvalid)
	case err != nil:
		return tokens.Caller{}, err
	case !t.RevokedAt.IsZero():
		return tokens.Caller{}, fmt.Errorf("%w: its Plinth session was revoked", tokens.ErrInvalid)
	case !s.opts.Now().Before(t.ExpiresAt):
		return tokens.Caller{}, tokens.ErrExpired
	}
	if err := tokens.Allow(t.Role, method); err != nil {
		return tokens.Caller{}, err
	}
	return tokens.Caller{TokenID: id, Role: t.Role, Owner: tokens.UserOwner(t.UserID), UserID: t.UserID, PlinthTokenID: t.PlinthTokenID}, nil
}

// Purge forgets session tokens that expired over an hour ago and revocations older than
// keepRevoked (they only matter while a token issued just before could still be recorded).
func (s *Service) Purge(ctx context.Context, keepRevoked time.Duration) error {
	n, err := s.store.PurgeSessionTokens(ctx, s.opts.Now().Add(-max(keepRevoked, time.Hour)))
	if err != nil {
		return err
	}
	if n > 0 {
		s.opts.Logger.DebugContext(ctx, "purged old session tokens and revocations", "rows", n)
	}
	return nil
}
