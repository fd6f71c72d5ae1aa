package identity

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// The use case of a sign-in an OpenID provider vouched for (SignInExternal) and its rule
// (ExternalSignedIn). How the provider's word is checked — the state, the code, the ID token
// and its claims — is package signin's; here the person is already known to be who the
// provider says, and gets a token exactly as a password login's.

// ErrPasswordLoginOff: password login is turned off (PLINTH_AUTH_PASSWORD_LOGIN=false); people
// sign in through an OpenID provider.
var ErrPasswordLoginOff = errors.New("password login is turned off (PLINTH_AUTH_PASSWORD_LOGIN); sign in with an OpenID provider")

// ErrAccountDisabled: the provider vouched for a person whose Plinth account an admin disabled.
var ErrAccountDisabled = errors.New("this account is disabled; ask an admin")

// ExternalIdentity is a person an OpenID provider vouched for: the provider's name and the
// subject it gave (the pair is the user, never a username), the username wanted for a new
// user (valid, or the store's own), and the role the provider's claims map to.
type ExternalIdentity struct {
	Provider string
	Subject  string
	Username string
	Role     authz.Role
}

// ExternalState is what the end of a provider's sign-in is decided on, read under the user's
// lock: the user (Created when this sign-in made them) and the ids of their live tokens.
type ExternalState struct {
	User       User
	Created    bool
	LiveTokens []string
}

// ExternalChange is what it writes, in one transaction: the user's role, the revocation of
// Revoked for Reason, the token when Token is set, and Events. Refused is why no token was
// issued (ErrAccountDisabled, a *TokenQuotaError); the rest is written all the same.
type ExternalChange struct {
	Role    authz.Role
	Revoked []string
	Reason  RevokeReason
	Token   *Token
	Events  []proto.Message
	Refused error
}

// ExternalSignedIn is the rule of a sign-in the provider vouched for, as
// Store.SignInExternal takes it. A disabled user gets nothing. The provider's claims decide
// the role at every sign-in: when they map to another role than the stored one, the user's
// live tokens are revoked (RevokeRoleChanged, as an admin's role change) so no cache keeps the
// old role, and the role is stored. Then the quota (on what is left live) and the token with
// its login.succeeded event, as LoginSucceeded.
func ExternalSignedIn(quota TokenQuota, ext ExternalIdentity, t Token, clientAddr string) func(before ExternalState) (ExternalChange, error) {
	return func(before ExternalState) (ExternalChange, error) {
		u := before.User
		if u.Disabled {
			return ExternalChange{Role: u.Role, Refused: ErrAccountDisabled}, nil
		}
		c := ExternalChange{Role: ext.Role}
		live := len(before.LiveTokens)
		if u.Role != ext.Role && !before.Created {
			c.Revoked, c.Reason = before.LiveTokens, RevokeRoleChanged
			for _, id := range before.LiveTokens {
				c.Events = append(c.Events, revokedEvent(id, u.ID, RevokeRoleChanged))
			}
			c.Events = append(c.Events, &eventsv1.UserAccessRevoked{UserId: u.ID, Reason: RevokeRoleChanged.event()})
			live = 0
		}
		if c.Refused = quota.Admit(u.Username, live); c.Refused != nil {
			return c, nil
		}
		t.UserID = u.ID
		c.Token = &t
		c.Events = append(c.Events, &eventsv1.LoginSucceeded{
			UserId: u.ID, Username: u.Username, ClientAddress: clientAddr, TokenId: t.ID,
		})
		return c, nil
	}
}

// SignInExternal issues a token to the person ext names, creating their user on the first
// sign-in: the user is found by (provider, subject) only. It returns the token, its record
// and the user as stored; ErrAccountDisabled or a *TokenQuotaError when none was issued.
func (s *Service) SignInExternal(ctx context.Context, ext ExternalIdentity, clientAddr string) (string, Token, User, error) {
	if _, err := authz.ParseRole(string(ext.Role)); err != nil || ext.Provider == "" || ext.Subject == "" {
		return "", Token{}, User{}, errors.New("identity: an external identity needs a provider, a subject and a role")
	}
	token, err := NewToken()
	if err != nil {
		return "", Token{}, User{}, err
	}
	now := s.opts.Now()
	t := Token{ID: TokenID(token), CreatedAt: now, ExpiresAt: now.Add(s.opts.TokenTTL)}
	u, c, err := s.store.SignInExternal(ctx, ext, ExternalSignedIn(s.opts.Tokens, ext, t, clientAddr))
	if err != nil {
		return "", Token{}, User{}, err
	}
	if c.Refused != nil {
		return "", Token{}, User{}, c.Refused
	}
	return token, *c.Token, u, nil
}

// SignInState is a sign-in begun at a provider, as stored until its callback: the key is the
// hex SHA-256 of the state the browser carries (ID), never the state itself.
type SignInState struct {
	ID           string
	Provider     string
	Nonce        string
	CodeVerifier string
	RedirectURI  string
	CreatedAt    time.Time
	ExpiresAt    time.Time
}
