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
// So are the login tokens Authenticate accepted (see verified).
type Issuer struct {
	keys     KeyStore
	sessions SessionCheck
	now      func() time.Time
	mu       sync.RWMutex
	cache    map[string][]byte
	verified map[string]*vagrant.Token // accepted login tokens → their bodies
}

// SessionCheck decides on a login token that expires, which only IssueExpiring makes (upstream's
// login tokens never expire): whether the session it is bound to still lives and lets it call
// method. Its error is the refusal (ErrInvalid for a session that ended).
type SessionCheck func(ctx context.Context, tokenID []byte, method string) error

// CheckSessionsWith makes Authenticate ask check about every expiring login token, at every
// call: a session ends at once, on every replica.
func (i *Issuer) CheckSessionsWith(check SessionCheck) { i.sessions = check }

// IssueExpiring returns a login token with id that expires at until. Its session is the
// caller's to record before handing it out.
func (i *Issuer) IssueExpiring(ctx context.Context, id []byte, until time.Time) (string, error) {
	return i.sign(ctx, nil, &vagrant.Token{Login: true, User: DefaultUser, TokenId: id, ValidUntil: timestamppb.New(until)})
}

// NewTokenID is a random token id (a nonce that also makes every signed body unique).
func NewTokenID() ([]byte, error) { return tokenID() }

// verifiedMax bounds the accepted tokens Authenticate remembers. A token's checks (base58,
// signature, body) give the same answer at every call — keys never change and the protocol
// has no revocation — so a runner calling several times per job pays them once; expiry is
// checked at every call.
const verifiedMax = 1024

// NewIssuer returns an Issuer over keys; now nil means time.Now.
func NewIssuer(keys KeyStore, now func() time.Time) *Issuer {
	if now == nil {
		now = time.Now
	}
	return &Issuer{keys: keys, now: now, cache: map[string][]byte{}, verified: map[string]*vagrant.Token{}}
}

// Bootstrap creates the signing key and returns the first login token. It works once per
// database: afterwards (and for a concurrent loser) it returns ErrBootstrapped.
func (i *Issuer) Bootstrap(ctx context.Context) (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("generate signing key: %w", err)
	}
	created, err := i.keys.CreateFirstKey(ctx, DefaultKeyID, key)
	if err != nil {
		return "", err
	}
	if !created {
		return "", ErrBootstrapped
	}
	i.remember(DefaultKeyID, key)
	return i.login(ctx, nil, nil)
}

// LoginToken returns a new login token that never expires (as upstream's).
func (i *Issuer) LoginToken(ctx context.Context) (string, error) {
	return i.login(ctx, nil, nil)
}

// InviteToken returns an invite valid for duration (a Go duration such as "24h"); entrypoint,
// when set, restricts the login tokens it converts to to entrypoint calls.
func (i *Issuer) InviteToken(ctx context.Context, duration string, entrypoint *vagrant.Token_Entrypoint) (string, error) {
	d, err := time.ParseDuration(duration)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("%w (got %s)", ErrBadDuration, input.Quote(duration))
	}
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	body := &vagrant.Token{
		Invite: true, TokenId: id, Entrypoint: entrypoint, ValidUntil: timestamppb.New(i.now().Add(d)),
	}
	return i.sign(ctx, nil, body)
}

// ConvertInvite exchanges a valid, unexpired invite for a login token, carrying over the
// invite's metadata and entrypoint restriction.
func (i *Issuer) ConvertInvite(ctx context.Context, invite string) (string, error) {
	tt, body, err := i.decode(ctx, invite)
	if err != nil {
		return "", err
	}
	if !body.GetInvite() {
		return "", fmt.Errorf("%w: not an invite token", ErrInvalid)
	}
	return i.login(ctx, tt.GetMetadata(), body.GetEntrypoint())
}

// Authenticate checks that token may call method (the short name, e.g. "UpsertBasis"):
// a valid login token of the default user, and entrypoint tokens only for Entrypoint* calls.
func (i *Issuer) Authenticate(ctx context.Context, token, method string) error {
	i.mu.RLock()
	body, ok := i.verified[token]
	i.mu.RUnlock()
	if ok && body.ValidUntil != nil && body.ValidUntil.AsTime().Before(i.now()) {
		return ErrExpired
	}
	if !ok {
		var err error
		if _, body, err = i.decode(ctx, token); err != nil {
			return err
		}
		if body.GetLogin() && body.GetUser() == DefaultUser {
			i.rememberToken(token, body)
		}
	}
	switch {
	case !body.GetLogin():
		return fmt.Errorf("%w: not a login token", ErrInvalid)
	case body.GetEntrypoint() != nil && !strings.HasPrefix(method, "Entrypoint"):
		return fmt.Errorf("%w: an entrypoint token may only call entrypoint endpoints", ErrInvalid)
	case body.GetUser() != DefaultUser:
		return fmt.Errorf("%w: unknown user", ErrInvalid)
	case body.GetValidUntil() != nil && i.sessions != nil:
		return i.sessions(ctx, body.GetTokenId(), method)
	}
	return nil
}

func (i *Issuer) login(ctx context.Context, metadata map[string]string, entrypoint *vagrant.Token_Entrypoint) (string, error) {
	id, err := tokenID()
	if err != nil {
		return "", err
	}
	return i.sign(ctx, metadata, &vagrant.Token{Login: true, User: DefaultUser, TokenId: id, Entrypoint: entrypoint})
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

// rememberToken caches an accepted login token, making room by forgetting another one.
func (i *Issuer) rememberToken(token string, body *vagrant.Token) {
	i.mu.Lock()
	defer i.mu.Unlock()
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
