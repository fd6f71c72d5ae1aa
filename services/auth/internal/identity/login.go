package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
)

// The Login use case and the rules of its end: what a success writes (LoginSucceeded) and
// what a failure publishes (loginFailed). Its counting before the password is checked is
// LockoutPolicy.Count (lockout.go); all its SQL is in the store's login.go.

// Attempt is one login attempt as the store records it.
type Attempt struct {
	Username      string // as typed
	ClientAddress string // "" when unknown
	At            time.Time
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

// LoginState is what the end of a successful attempt is decided on, as the store read it
// holding the user's lock: the username, whether the user is disabled and their password
// hash as stored now (an admin may have changed either while the password was being
// checked), how many live tokens (unexpired, unrevoked) the user holds, and the attempt's
// counters as stored (a missing one is the zero Counter; Address is nil when the address is
// unknown).
type LoginState struct {
	Username     string
	Disabled     bool
	PasswordHash string
	LiveTokens   int
	Counters     Counters
}

// LoginChange is what the end of a successful attempt writes, in one transaction: the
// counters (the zero Counter is no counter at all), the password hash when PasswordHash is
// set, the token when Token is set, and Events. Refused is why no token was issued (a
// *TokenQuotaError), for the caller: the store writes the rest all the same.
type LoginChange struct {
	Counters     Counters
	PasswordHash string
	Token        *Token
	Events       []proto.Message
	Refused      error
}

// LoginSucceeded is the rule of a login whose password was right, as Store.FinishLogin takes
// it: the attempt is forgiven (Forgive), rehash (when not "") replaces the stored hash, and
// the token t is issued with a login.succeeded event — unless the user already holds as many
// live tokens as quota allows: then no token and no event, Refused says why, and the attempt
// is forgiven all the same (the password was right: a user held at the quota must not be
// throttled for trying).
//
// checked is the hash the password was checked against, read before the (slow) check: a user
// disabled, or given a new password, since then gets no token — a disable or a password reset
// revokes the tokens that exist when it commits, and a login that was hashing then must not
// add one after (ErrBadLogin, the attempt neither forgiven nor counted again, and login.failed).
func LoginSucceeded(quota TokenQuota, a Attempt, t Token, checked, rehash string) func(before LoginState) (LoginChange, error) {
	return func(before LoginState) (LoginChange, error) {
		switch {
		case before.Disabled:
			return LoginChange{Counters: before.Counters, Refused: ErrBadLogin, Events: []proto.Message{loginFailed(a, FailureDisabled)}}, nil
		case before.PasswordHash != checked:
			return LoginChange{Counters: before.Counters, Refused: ErrBadLogin, Events: []proto.Message{loginFailed(a, FailureWrongPassword)}}, nil
		}
		c := LoginChange{Counters: Forgive(before.Counters), PasswordHash: rehash}
		if c.Refused = quota.Admit(before.Username, before.LiveTokens); c.Refused != nil {
			return c, nil
		}
		c.Token = &t
		c.Events = []proto.Message{&eventsv1.LoginSucceeded{
			UserId: t.UserID, Username: before.Username, ClientAddress: a.ClientAddress, TokenId: t.ID,
		}}
		return c, nil
	}
}

// loginFailed is the login.failed event of attempt a. A username that failed validation is
// left out: it is unvalidated client input (maybe a password typed into the wrong field).
func loginFailed(a Attempt, why LoginFailure) *eventsv1.LoginFailed {
	username := a.Username
	if why == FailureInvalid {
		username = ""
	}
	return &eventsv1.LoginFailed{Username: username, ClientAddress: a.ClientAddress, Reason: map[LoginFailure]eventsv1.LoginFailureReason{
		FailureUnknownUser:   eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_UNKNOWN_USER,
		FailureWrongPassword: eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_WRONG_PASSWORD,
		FailureDisabled:      eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_USER_DISABLED,
		FailureLocked:        eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_LOCKED_OUT,
		FailureInvalid:       eventsv1.LoginFailureReason_LOGIN_FAILURE_REASON_INVALID_REQUEST,
	}[why]}
}

// Login checks a username and password and issues a token. Every credential failure returns
// ErrBadLogin, whatever the cause; a throttle returns *LockedError; too many logins hashing at
// once *BusyError (before anything is counted or hashed); malformed input *FieldError; a user
// who already holds as many live tokens as Options.Tokens allows *TokenQuotaError, once the
// password was checked (so it tells nobody else whether the user exists).
func (s *Service) Login(ctx context.Context, username, password, clientAddr string) (string, Token, error) {
	if s.opts.NoPasswordLogin {
		return "", Token{}, ErrPasswordLoginOff
	}
	a := Attempt{Username: username, ClientAddress: clientAddr, At: s.opts.Now()}
	if err := ValidateUsername(username); err != nil {
		return "", Token{}, s.fail(ctx, a, FailureInvalid, err)
	}
	if err := ValidatePassword(password); err != nil {
		return "", Token{}, s.fail(ctx, a, FailureInvalid, err)
	}
	leave, err := s.gate.admit(clientAddr, a.At)
	if err != nil {
		return "", Token{}, err
	}
	defer leave()
	if err := s.store.BeginAttempt(ctx, a, s.opts.Lockout.Count(a.At)); err != nil {
		var locked *LockedError
		if errors.As(err, &locked) {
			_ = s.store.RecordFailure(ctx, loginFailed(a, FailureLocked))
		}
		return "", Token{}, err
	}
	u, err := s.store.UserByName(ctx, username)
	if errors.Is(err, ErrNotFound) {
		if err := s.gate.run(ctx, func() { _, _, _ = s.verify(s.dummyHash, password, s.opts.Hash) }); err != nil {
			return "", Token{}, err
		}
		return "", Token{}, s.fail(ctx, a, FailureUnknownUser, ErrBadLogin)
	}
	if err != nil {
		return "", Token{}, err
	}
	if u.Provider != "" {
		// A user of an OpenID provider has no password: answered as an unknown user, with
		// the same argon2id work, so a password guess tells nothing either.
		if err := s.gate.run(ctx, func() { _, _, _ = s.verify(s.dummyHash, password, s.opts.Hash) }); err != nil {
			return "", Token{}, err
		}
		return "", Token{}, s.fail(ctx, a, FailureUnknownUser, ErrBadLogin)
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
		return "", Token{}, s.fail(ctx, a, FailureWrongPassword, ErrBadLogin)
	case u.Disabled:
		return "", Token{}, s.fail(ctx, a, FailureDisabled, ErrBadLogin)
	}
	var newHash string
	if rehash {
		newHash = s.rehash(ctx, u.ID, password)
	}
	token, err := NewToken()
	if err != nil {
		return "", Token{}, err
	}
	t := Token{ID: TokenID(token), UserID: u.ID, CreatedAt: a.At, ExpiresAt: a.At.Add(s.opts.TokenTTL)}
	c, err := s.store.FinishLogin(ctx, u.ID, a, LoginSucceeded(s.opts.Tokens, a, t, u.PasswordHash, newHash))
	if err != nil {
		return "", Token{}, err
	}
	if c.Refused != nil {
		return "", Token{}, c.Refused
	}
	s.gate.vouch(clientAddr, a.At)
	return token, t, nil
}

// rehash returns password hashed with the current parameters, hashed in a slot of the hash
// gate, or "" when that fails: the login itself succeeded and must not be refused for it,
// but an operator who raised the parameters needs to know they are not being applied.
func (s *Service) rehash(ctx context.Context, userID, password string) string {
	var h string
	var err error
	if gerr := s.gate.run(ctx, func() { h, err = HashPassword(password, s.opts.Hash) }); gerr != nil {
		err = gerr
	}
	if err != nil {
		s.log().WarnContext(ctx, "could not rehash the password with the current argon2id parameters", "user_id", userID, "error", err)
		return ""
	}
	return h
}

// fail publishes the attempt's login.failed event and returns err, or the store's error when
// the event could not be written.
func (s *Service) fail(ctx context.Context, a Attempt, why LoginFailure, err error) error {
	if rerr := s.store.RecordFailure(ctx, loginFailed(a, why)); rerr != nil {
		return rerr
	}
	return err
}
