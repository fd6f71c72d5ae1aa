package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
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

// Login checks a username and password and issues a token. Every credential failure returns
// ErrBadLogin, whatever the cause; a throttle returns *LockedError; too many logins hashing at
// once *BusyError (before anything is counted or hashed); malformed input *FieldError; a user
// who already holds as many live tokens as Options.Tokens allows *TokenQuotaError, once the
// password was checked (so it tells nobody else whether the user exists).
func (s *Service) Login(ctx context.Context, username, password, clientAddr string) (string, Token, error) {
	a := Attempt{Username: username, ClientAddress: clientAddr, At: s.opts.Now()}
	if err := ValidateUsername(username); err != nil {
		return "", Token{}, s.invalid(ctx, a, err)
	}
	if err := ValidatePassword(password); err != nil {
		return "", Token{}, s.invalid(ctx, a, err)
	}
	leave, err := s.gate.admit(clientAddr, a.At)
	if err != nil {
		return "", Token{}, err
	}
	defer leave()
	if err := s.store.BeginAttempt(ctx, a, s.opts.Lockout.Count(a.At)); err != nil {
		var locked *LockedError
		if errors.As(err, &locked) {
			_ = s.store.RecordFailure(ctx, a, FailureLocked)
		}
		return "", Token{}, err
	}
	u, err := s.store.UserByName(ctx, username)
	if errors.Is(err, ErrNotFound) {
		if err := s.gate.run(ctx, func() { _, _, _ = s.verify(s.dummyHash, password, s.opts.Hash) }); err != nil {
			return "", Token{}, err
		}
		return "", Token{}, s.fail(ctx, a, FailureUnknownUser)
	}
	if err != nil {
		return "", Token{}, err
	}
	var ok, rehash bool
	if gerr := s.gate.run(ctx, func() { ok, rehash, err = s.verify(u.PasswordHash, password, s.opts.Hash) }); gerr != nil {
		return "", Token{}, gerr
	}
	if err != nil {
		return "", Token{}, fmt.Errorf("user %s: %w", u.ID, err)
	}
	switch {
	case !ok:
		return "", Token{}, s.fail(ctx, a, FailureWrongPassword)
	case u.Disabled:
		return "", Token{}, s.fail(ctx, a, FailureDisabled)
	}
	if rehash {
		// The login itself succeeded: a failed upgrade of the stored hash must not refuse it,
		// but an operator who raised the parameters needs to know they are not being applied.
		if err := s.rehash(ctx, u.ID, password); err != nil {
			s.log().WarnContext(ctx, "could not rehash the password with the current argon2id parameters", "user_id", u.ID, "error", err)
		}
	}
	token, err := NewToken()
	if err != nil {
		return "", Token{}, err
	}
	t := Token{ID: TokenID(token), UserID: u.ID, CreatedAt: a.At, ExpiresAt: a.At.Add(s.opts.TokenTTL)}
	admit := func(live int) error { return s.opts.Tokens.Admit(u.Username, live) }
	if err := s.store.CreateToken(ctx, t, a, admit); err != nil {
		return "", Token{}, err
	}
	s.gate.vouch(clientAddr, a.At)
	return token, t, nil
}

// rehash stores password hashed with the current parameters, in a slot of the hash gate.
func (s *Service) rehash(ctx context.Context, userID, password string) error {
	var h string
	var err error
	if gerr := s.gate.run(ctx, func() { h, err = HashPassword(password, s.opts.Hash) }); gerr != nil {
		return gerr
	}
	if err != nil {
		return err
	}
	return s.store.SetPassword(ctx, userID, h, false)
}

func (s *Service) log() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

func (s *Service) invalid(ctx context.Context, a Attempt, err error) error {
	if rerr := s.store.RecordFailure(ctx, a, FailureInvalid); rerr != nil {
		return rerr
	}
	return err
}

func (s *Service) fail(ctx context.Context, a Attempt, why LoginFailure) error {
	if err := s.store.RecordFailure(ctx, a, why); err != nil {
		return err
	}
	return ErrBadLogin
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
	return s.store.RevokeToken(ctx, TokenID(token), RevokeLogout)
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
