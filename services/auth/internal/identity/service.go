package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// Options configure the Service.
type Options struct {
	Hash     HashParams
	Lockout  LockoutPolicy
	TokenTTL time.Duration
	// HashConcurrency is how many logins may hash at once (0: runtime.GOMAXPROCS) and
	// HashQueue how many more may wait for one of them (0: twice HashConcurrency); logins beyond
	// both are refused with *BusyError before any hashing.
	HashConcurrency int
	HashQueue       int
	// Tokens bounds the live tokens of one user; a login beyond it is a *TokenQuotaError.
	Tokens TokenQuota
	// NoPasswordLogin turns password login off (ErrPasswordLoginOff): people sign in through
	// an OpenID provider only.
	NoPasswordLogin bool
	Now             func() time.Time // nil: time.Now
	Logger          *slog.Logger     // nil: discard
}

// Service is the auth use cases: login, logout, token checks and user administration.
type Service struct {
	store Store
	opts  Options
	// dummyHash is verified against when the user does not exist, so that an unknown username
	// costs the same argon2id work as a wrong password and timing does not enumerate users.
	dummyHash string
	gate      *hashGate
	// verify is VerifyPassword; tests replace it to block or count hashing.
	verify func(encoded, password string, current HashParams) (ok, needsRehash bool, err error)
}

// NewService checks the options and prepares the service.
func NewService(store Store, o Options) (*Service, error) {
	if err := o.Hash.Validate(); err != nil {
		return nil, err
	}
	if err := o.Lockout.Validate(); err != nil {
		return nil, err
	}
	if o.TokenTTL < time.Minute {
		return nil, errors.New("token TTL must be at least a minute")
	}
	if o.Tokens.MaxPerUser < 0 {
		return nil, fmt.Errorf("%s: must not be negative (0: no limit)", TokensQuotaSetting)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	gate, err := newHashGate(o.HashConcurrency, o.HashQueue)
	if err != nil {
		return nil, err
	}
	dummy, err := HashPassword("plinth-dummy-password", o.Hash)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, opts: o, dummyHash: dummy, gate: gate, verify: VerifyPassword}, nil
}

func (s *Service) log() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

// Logout revokes the presented token. It is idempotent; only a missing token is an error
// (ErrNoToken), matching upstream's success=false.
func (s *Service) Logout(ctx context.Context, token string) error {
	if token == "" {
		return ErrNoToken
	}
	if !LooksLikeToken(token) {
		return nil // never issued by us, so there is nothing to revoke
	}
	return s.store.RevokeToken(ctx, TokenID(token), SignOut)
}

// SignOut is the rule of signing out, as Store.RevokeToken takes it: a token not yet revoked
// (expired ones too: a cache may still hold them) is revoked with one token.revoked; a revoked
// one changes nothing, so signing out twice announces it once.
func SignOut(before Token) (TokenChange, error) {
	if before.Revoked {
		return TokenChange{}, nil
	}
	return TokenChange{Reason: RevokeLogout, Events: []proto.Message{revokedEvent(before.ID, before.UserID, RevokeLogout)}}, nil
}

// CheckToken reports whether token is live, and whose it is (id, username, role). A bad token
// is a false answer, never an error; errors are the store's. It is an authn.Checker.
func (s *Service) CheckToken(ctx context.Context, token string) (a authn.Account, ok bool, err error) {
	if !LooksLikeToken(token) {
		return authn.Account{}, false, nil
	}
	return s.store.ValidToken(ctx, TokenID(token), s.opts.Now())
}

// Bootstrap creates the first user, `admin` (role admin), when there are no users. An empty password means
// "generate one": it is returned so the caller can print it once. created is false when users
// already exist (or another instance won the race).
func (s *Service) Bootstrap(ctx context.Context, password string) (generated string, created bool, err error) {
	n, err := s.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return "", false, err
	}
	if password == "" {
		if password, err = GeneratePassword(); err != nil {
			return "", false, err
		}
		generated = password
	}
	if _, err := s.AddUser(ctx, "admin", password, authz.Admin); err != nil {
		if errors.Is(err, ErrExists) {
			return "", false, nil
		}
		return "", false, err
	}
	return generated, true, nil
}
