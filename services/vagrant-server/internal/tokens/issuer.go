package tokens

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

var (
	// ErrBootstrapped answers BootstrapToken once a signing key exists.
	ErrBootstrapped = errors.New("server is already bootstrapped")
	// ErrUnknownKey is a KeyStore's answer for a key id it does not hold.
	ErrUnknownKey = errors.New("unknown signing key")
	// ErrBadDuration is an invite duration that is not a positive Go duration.
	ErrBadDuration = errors.New("invite duration must be a positive duration such as 30m or 24h")
)

// KeyStore holds the signing keys. Keys never change once stored.
type KeyStore interface {
	// CreateFirstKey stores key under id only when no key exists at all, reporting whether it
	// did; concurrent callers (on any replica) see exactly one true.
	CreateFirstKey(ctx context.Context, id string, key []byte) (bool, error)
	// Key returns key id, or ErrUnknownKey.
	Key(ctx context.Context, id string) ([]byte, error)
}

// Issuer issues and checks tokens. Keys are cached after first use: they are immutable.
// So are the login tokens Authenticate accepted, with their grants (see verified).
type Issuer struct {
	keys     KeyStore
	grants   GrantStore
	sessions SessionCheck
	quota    Quota
	now      func() time.Time
	mu       sync.RWMutex
	cache    map[string][]byte
	verified map[string]accepted // accepted login tokens → their bodies and grants
	// forgotten are the users whose tokens ForgetUser forgot, and when: a grant read before
	// then is not remembered.
	forgotten map[string]time.Time
}

// accepted is a login token Authenticate accepted: its body and, for a token without an
// expiry, whom its grant says it speaks for.
type accepted struct {
	body   *vagrant.Token
	caller *Caller
}

// SessionCheck decides on a login token that expires, which only IssueExpiring makes (upstream's
// login tokens never expire): whether the session it is bound to still lives and lets it call
// method, and whom it speaks for. Its error is the refusal (ErrInvalid for a session that
// ended).
type SessionCheck func(ctx context.Context, tokenID []byte, method string) (Caller, error)

// CheckSessionsWith makes Authenticate ask check about every expiring login token, at every
// call: a session ends at once, on every replica.
func (i *Issuer) CheckSessionsWith(check SessionCheck) { i.sessions = check }

// LimitTokens makes every token the issuer records count against its owner's quota: a
// token beyond it is refused with *QuotaError.
func (i *Issuer) LimitTokens(q Quota) { i.quota = q }

// IssueExpiring returns a login token with id that expires at until. Its session is the
// caller's to record before handing it out.
func (i *Issuer) IssueExpiring(ctx context.Context, id []byte, until time.Time) (string, error) {
	return i.sign(ctx, nil, &vagrant.Token{Login: true, User: DefaultUser, TokenId: id, ValidUntil: timestamppb.New(until)})
}

// NewTokenID is a random token id (a nonce that also makes every signed body unique).
func NewTokenID() ([]byte, error) { return tokenID() }

// verifiedMax bounds the accepted tokens Authenticate remembers. A token's checks (base58,
// signature, body, grant) give the same answer at every call — keys and grants never change,
// and the one revocation there is, a user's, forgets that user's tokens (ForgetUser) — so a
// runner calling several times per job pays them once; expiry and a session token's session
// are checked at every call.
const verifiedMax = 1024

// NewIssuer returns an Issuer over keys, recording its tokens' grants in grants; now nil
// means time.Now.
func NewIssuer(keys KeyStore, grants GrantStore, now func() time.Time) *Issuer {
	if now == nil {
		now = time.Now
	}
	return &Issuer{keys: keys, grants: grants, now: now, cache: map[string][]byte{}, verified: map[string]accepted{},
		forgotten: map[string]time.Time{}}
}

// Bootstrap creates the signing key and returns the first login token, an admin's owned by
// "bootstrap". It works once per database: afterwards (and for a concurrent loser) it returns
// ErrBootstrapped.
func (i *Issuer) Bootstrap(ctx context.Context) (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("generate signing key: %w", err)
	}
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	// The grant goes first: a failure after it leaves a grant no token was signed for (and
	// none can be without the key), where the other order could leave a bootstrapped server
	// whose first token has no role — and no way to get another.
	g := Grant{TokenID: id, Role: authz.Admin, Owner: "bootstrap"}
	if err := i.grants.AddGrant(ctx, g, i.quota.Admit(g.Owner, "")); err != nil {
		return "", err
	}
	created, err := i.keys.CreateFirstKey(ctx, DefaultKeyID, key)
	if err != nil {
		return "", err
	}
	if !created {
		return "", ErrBootstrapped
	}
	i.remember(DefaultKeyID, key)
	return i.sign(ctx, nil, &vagrant.Token{Login: true, User: DefaultUser, TokenId: id})
}

// LoginToken returns a new login token that never expires (as upstream's), made by caller by:
// of role (empty: by's own, never above it) and owned by by's owner.
func (i *Issuer) LoginToken(ctx context.Context, by Caller, role authz.Role) (string, error) {
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	g, err := grantFor(by, id, false, role)
	if err != nil {
		return "", err
	}
	return i.login(ctx, g, nil, nil)
}

// InviteToken returns an invite valid for duration (a Go duration such as "24h"), made by
// caller by with role as LoginToken's; entrypoint, when set, restricts the login tokens it
// converts to to entrypoint calls.
func (i *Issuer) InviteToken(ctx context.Context, by Caller, role authz.Role, duration string, entrypoint *vagrant.Token_Entrypoint) (string, error) {
	d, err := time.ParseDuration(duration)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("%w (got %s)", ErrBadDuration, input.Quote(duration))
	}
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	g, err := grantFor(by, id, true, role)
	if err != nil {
		return "", err
	}
	// Postgres keeps microseconds: the recorded expiry must not be earlier than the signed one.
	until := i.now().Add(d)
	g.ExpiresAt = until.Truncate(time.Microsecond).Add(time.Microsecond)
	if err := i.grants.AddGrant(ctx, g, i.quota.Admit(g.Owner, "")); err != nil {
		return "", err
	}
	body := &vagrant.Token{
		Invite: true, TokenId: id, Entrypoint: entrypoint, ValidUntil: timestamppb.New(until),
	}
	return i.sign(ctx, nil, body)
}

// ConvertInvite exchanges a valid, unexpired invite for a login token, carrying over the
// invite's role, owner, metadata and entrypoint restriction. An invite without a grant (made
// before grants existed) is refused: it has no role to pass on.
func (i *Issuer) ConvertInvite(ctx context.Context, invite string) (string, error) {
	tt, body, err := i.decode(ctx, invite)
	if err != nil {
		return "", err
	}
	if !body.GetInvite() {
		return "", fmt.Errorf("%w: not an invite token", ErrInvalid)
	}
	g, err := i.grant(ctx, body.GetTokenId())
	if err != nil {
		return "", err
	}
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	return i.login(ctx, Grant{TokenID: id, Role: g.Role, Owner: g.Owner, UserID: g.UserID, IssuedBy: g.TokenID},
		tt.GetMetadata(), body.GetEntrypoint())
}

// grant returns token id's grant; a token without one is ErrInvalid.
func (i *Issuer) grant(ctx context.Context, id []byte) (Grant, error) {
	g, err := i.grants.Grant(ctx, id)
	if errors.Is(err, ErrUnknownGrant) {
		return Grant{}, fmt.Errorf("%w: a token made before tokens had roles and owners; make a new one", ErrInvalid)
	}
	if err == nil && g.Revoked {
		return Grant{}, fmt.Errorf("%w: its owner's access was revoked", ErrInvalid)
	}
	return g, err
}

// RevokeUserGrants revokes the grants userID owns made before at (a UserGrantRevoker, for
// the revocation events) and forgets the user's accepted tokens, before and after the write:
// a call that read a grant before it was revoked then cannot leave it remembered.
func (i *Issuer) RevokeUserGrants(ctx context.Context, userID string, at time.Time) (int64, error) {
	i.ForgetUser(userID)
	n, err := i.grants.RevokeUserGrants(ctx, userID, at)
	i.ForgetUser(userID)
	return n, err
}

// ForgetUser forgets the accepted tokens userID owns, so that their next call reads their
// grant again, and keeps any call that read one before now from remembering it.
func (i *Issuer) ForgetUser(userID string) {
	now := i.now()
	i.mu.Lock()
	defer i.mu.Unlock()
	for token, a := range i.verified {
		if a.caller != nil && a.caller.UserID == userID {
			delete(i.verified, token)
		}
	}
	for id, at := range i.forgotten { // entries far older than any grant read can go
		if now.Sub(at) > time.Minute {
			delete(i.forgotten, id)
		}
	}
	i.forgotten[userID] = now
}

// Authenticate checks that token may call method (the short name, e.g. "UpsertBasis"):
// a valid login token of the default user, entrypoint tokens only for Entrypoint* calls, and
// the token's role (its session's, or its grant's) must allow method; it returns whom the
// token speaks for.
func (i *Issuer) Authenticate(ctx context.Context, token, method string) (Caller, error) {
	i.mu.RLock()
	known, ok := i.verified[token]
	i.mu.RUnlock()
	body := known.body
	if ok && body.ValidUntil != nil && body.ValidUntil.AsTime().Before(i.now()) {
		return Caller{}, ErrExpired
	}
	if !ok {
		read := i.now()
		var err error
		if _, body, err = i.decode(ctx, token); err != nil {
			return Caller{}, err
		}
		known = accepted{body: body}
		if body.GetLogin() && body.GetUser() == DefaultUser && body.GetValidUntil() == nil {
			// Grants never change: read once, remembered with the token.
			g, err := i.grant(ctx, body.GetTokenId())
			if err != nil {
				return Caller{}, err
			}
			c := g.caller()
			known.caller = &c
		}
		if body.GetLogin() && body.GetUser() == DefaultUser {
			i.rememberToken(token, known, read)
		}
	}
	switch {
	case !body.GetLogin():
		return Caller{}, fmt.Errorf("%w: not a login token", ErrInvalid)
	case body.GetEntrypoint() != nil && !strings.HasPrefix(method, "Entrypoint"):
		return Caller{}, fmt.Errorf("%w: an entrypoint token may only call entrypoint endpoints", ErrInvalid)
	case body.GetUser() != DefaultUser:
		return Caller{}, fmt.Errorf("%w: unknown user", ErrInvalid)
	case body.GetValidUntil() != nil:
		if i.sessions == nil {
			return Caller{}, fmt.Errorf("%w: an expiring login token and no sessions", ErrInvalid)
		}
		return i.sessions(ctx, body.GetTokenId(), method)
	}
	if err := Allow(known.caller.Role, method); err != nil {
		return Caller{}, err
	}
	return *known.caller, nil
}

// login records g and signs its login token.
func (i *Issuer) login(ctx context.Context, g Grant, metadata map[string]string, entrypoint *vagrant.Token_Entrypoint) (string, error) {
	// Signing first: a server without a key (not bootstrapped) records nothing.
	token, err := i.sign(ctx, metadata, &vagrant.Token{Login: true, User: DefaultUser, TokenId: g.TokenID, Entrypoint: entrypoint})
	if err != nil {
		return "", err
	}
	if err := i.grants.AddGrant(ctx, g, i.quota.Admit(g.Owner, "")); err != nil {
		return "", err
	}
	return token, nil
}

func (i *Issuer) sign(ctx context.Context, metadata map[string]string, body *vagrant.Token) (string, error) {
	key, err := i.key(ctx, DefaultKeyID)
	if errors.Is(err, ErrUnknownKey) {
		return "", fmt.Errorf("no signing key: the server is not bootstrapped yet: %w", err)
	}
	if err != nil {
		return "", err
	}
	return Sign(DefaultKeyID, key, metadata, body)
}

// decode parses and verifies a token with the key it names.
func (i *Issuer) decode(ctx context.Context, token string) (*vagrant.TokenTransport, *vagrant.Token, error) {
	tt, err := Parse(token)
	if err != nil {
		return nil, nil, err
	}
	key, err := i.key(ctx, tt.GetKeyId())
	if errors.Is(err, ErrUnknownKey) {
		return nil, nil, fmt.Errorf("%w: unknown key", ErrInvalid)
	}
	if err != nil {
		return nil, nil, err
	}
	body, err := Verify(tt, key, i.now())
	return tt, body, err
}

func (i *Issuer) key(ctx context.Context, id string) ([]byte, error) {
	i.mu.RLock()
	key, ok := i.cache[id]
	i.mu.RUnlock()
	if ok {
		return key, nil
	}
	key, err := i.keys.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	i.remember(id, key)
	return key, nil
}

// rememberToken caches an accepted login token read at read, making room by forgetting
// another one — unless its owner's tokens were forgotten since (its grant may be revoked).
func (i *Issuer) rememberToken(token string, body accepted, read time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if body.caller != nil && body.caller.UserID != "" {
		if at, ok := i.forgotten[body.caller.UserID]; ok && !at.Before(read) {
			return
		}
	}
	if len(i.verified) >= verifiedMax {
		for t := range i.verified {
			delete(i.verified, t)
			break
		}
	}
	i.verified[token] = body
}

func (i *Issuer) remember(id string, key []byte) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cache[id] = key
}

// tokenID is a token's random id, which also makes every signed body unique.
func tokenID() ([]byte, error) {
	id := make([]byte, tokenIDSize)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("generate token id: %w", err)
	}
	return id, nil
}
