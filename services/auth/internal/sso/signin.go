package sso

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// States is where sign-ins wait for their callback (the store: schema auth, shared by every
// replica).
type States interface {
	SaveSignInState(ctx context.Context, st identity.SignInState) error
	TakeSignInState(ctx context.Context, id string) (identity.SignInState, error)
}

// Issuer issues the Plinth token of a person a provider vouched for
// (identity.Service.SignInExternal).
type Issuer interface {
	SignInExternal(ctx context.Context, ext identity.ExternalIdentity, clientAddr string) (string, identity.Token, identity.User, error)
}

// Options configure the Service.
type Options struct {
	// StateTTL is how long a begun sign-in waits for its callback.
	StateTTL time.Duration
	// PasswordLogin says whether password login is on (ListProviders reports it).
	PasswordLogin bool
	// HTTPClient talks to the providers; nil: one with no proxy tricks and a 10 s timeout.
	HTTPClient *http.Client
	Now        func() time.Time // nil: time.Now
	Logger     *slog.Logger
}

// Service is the sign-in use cases: Providers, Begin and Complete.
type Service struct {
	providers []*Provider
	states    States
	issuer    Issuer
	opts      Options
}

// NewService serves the providers (in their configured order).
func NewService(providers []*Provider, states States, issuer Issuer, o Options) (*Service, error) {
	if o.StateTTL < 10*time.Second {
		return nil, errors.New("PLINTH_AUTH_OIDC_STATE_TTL: must be at least 10s")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: httpTimeout}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{providers: providers, states: states, issuer: issuer, opts: o}, nil
}

// Providers are the configured providers, in order, and whether password login is on.
func (s *Service) Providers() ([]*Provider, bool) { return s.providers, s.opts.PasswordLogin }

// Begun is a sign-in begun: the URL to send the browser to, and its state.
type Begun struct {
	URL, State, Provider string
	ExpiresAt            time.Time
}

// Size bounds of the callback's fields: a provider's code is far shorter; anything longer is
// not one, and is refused before any work.
const (
	maxCode        = 2048
	stateBytes     = 32
	maxRedirectURL = 2048
)

// Begin begins a sign-in at the provider called name, to come back to redirect (one of the
// provider's redirect URLs; "" the first): a random state, nonce and PKCE verifier, stored
// (the state only as its hash) until StateTTL, and the provider's authorization URL.
func (s *Service) Begin(ctx context.Context, name, redirect string) (Begun, error) {
	p, err := s.provider("provider", name)
	if err != nil {
		return Begun{}, err
	}
	if err := input.String("redirect_uri", redirect, maxRedirectURL); err != nil {
		return Begun{}, err
	}
	redirect, ok := p.redirectURL(redirect)
	if !ok {
		return Begun{}, &input.Error{Field: "redirect_uri", Reason: fmt.Sprintf("is not one of provider %s's redirect_urls", p.Name)}
	}
	e, err := p.discover(ctx, s.opts.HTTPClient)
	if err != nil {
		return Begun{}, err
	}
	state, nonce, verifier := random(), random(), random()
	now := s.opts.Now()
	st := identity.SignInState{ID: identity.TokenID(state), Provider: p.Name, Nonce: nonce, CodeVerifier: verifier,
		RedirectURI: redirect, CreatedAt: now, ExpiresAt: now.Add(s.opts.StateTTL)}
	if err := s.states.SaveSignInState(ctx, st); err != nil {
		return Begun{}, err
	}
	return Begun{URL: p.authorizationURL(e, redirect, state, nonce, verifier), State: state, Provider: p.Name, ExpiresAt: st.ExpiresAt}, nil
}

// Callback is what the provider sent back, and where.
type Callback struct {
	Code, State, RedirectURI string
	// Provider, when set, must be the state's (Koor's callback names it in its path).
	Provider   string
	ClientAddr string
}

// SignedIn is a completed sign-in: the Plinth token and its user.
type SignedIn struct {
	Token    string
	Record   identity.Token
	User     identity.User
	Provider string
}

// Complete takes the state (once: a replayed callback finds none), checks it is live and was
// begun for this redirect URL (and provider), exchanges the code, verifies the ID token, maps
// its claims to a role and issues a Plinth token. Nothing is created unless every check
// passed.
func (s *Service) Complete(ctx context.Context, cb Callback) (SignedIn, error) {
	if err := checkCallback(cb); err != nil {
		return SignedIn{}, err
	}
	st, err := s.states.TakeSignInState(ctx, identity.TokenID(cb.State))
	if errors.Is(err, identity.ErrNotFound) {
		return SignedIn{}, &StateError{Why: "is unknown or was already used; sign in again"}
	}
	if err != nil {
		return SignedIn{}, err
	}
	switch {
	case !s.opts.Now().Before(st.ExpiresAt):
		return SignedIn{}, &StateError{Why: "has expired; sign in again"}
	case cb.Provider != "" && cb.Provider != st.Provider:
		return SignedIn{}, &StateError{Why: "was begun with another provider; sign in again"}
	case cb.RedirectURI != st.RedirectURI:
		return SignedIn{}, &StateError{Why: "was begun for another redirect_uri; sign in again"}
	}
	p, err := s.provider("provider", st.Provider)
	if err != nil { // configured when begun, gone since (a restart with other providers)
		return SignedIn{}, &StateError{Why: fmt.Sprintf("names provider %s, which is no longer configured", st.Provider)}
	}
	e, err := p.discover(ctx, s.opts.HTTPClient)
	if err != nil {
		return SignedIn{}, err
	}
	claims, err := p.exchange(ctx, s.opts.HTTPClient, e, cb.Code, st.CodeVerifier, st.RedirectURI, st.Nonce)
	if err != nil {
		return SignedIn{}, err
	}
	all := claims.Claims
	if all == nil {
		all = map[string]any{}
	}
	if claims.PreferredUsername != "" {
		all["preferred_username"] = claims.PreferredUsername
	}
	if claims.Email != "" {
		all["email"] = claims.Email
	}
	role, ok := p.RoleOf(all)
	if !ok {
		return SignedIn{}, &NoRoleError{Provider: p.Name, Claim: p.RoleClaim}
	}
	ext := identity.ExternalIdentity{Provider: p.Name, Subject: claims.Subject, Username: p.UsernameOf(all), Role: role}
	token, rec, u, err := s.issuer.SignInExternal(ctx, ext, cb.ClientAddr)
	if err != nil {
		return SignedIn{}, err
	}
	s.opts.Logger.InfoContext(ctx, "signed in through an OpenID provider", "provider", p.Name, "user_id", u.ID,
		"username", u.Username, "role", string(u.Role), "token_id", rec.ID)
	return SignedIn{Token: token, Record: rec, User: u, Provider: p.Name}, nil
}

// checkCallback bounds the callback's fields before any work.
func checkCallback(cb Callback) error {
	if cb.Code == "" {
		return &input.Error{Field: "code", Reason: "is required"}
	}
	if len(cb.Code) > maxCode || !utf8.ValidString(cb.Code) || !printable(cb.Code) {
		return &input.Error{Field: "code", Reason: fmt.Sprintf("is not an authorization code (printable ASCII, at most %d bytes)", maxCode)}
	}
	if cb.State == "" {
		return &input.Error{Field: "state", Reason: "is required"}
	}
	if len(cb.State) != base64.RawURLEncoding.EncodedLen(stateBytes) || !printable(cb.State) {
		return &input.Error{Field: "state", Reason: "is not a state this service issued"}
	}
	if cb.RedirectURI == "" {
		return &input.Error{Field: "redirect_uri", Reason: "is required: the callback URL the code was sent to"}
	}
	if err := input.String("redirect_uri", cb.RedirectURI, maxRedirectURL); err != nil {
		return err
	}
	if cb.Provider != "" && !providerName.MatchString(cb.Provider) {
		return &input.Error{Field: "provider", Reason: "is not a provider name ([a-z0-9-], 1 to 32)"}
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// provider finds the configured provider name, or a *NotFoundError (an *input.Error when the
// name is malformed), field naming the request field.
func (s *Service) provider(field, name string) (*Provider, error) {
	if name == "" {
		return nil, &input.Error{Field: field, Reason: "is required"}
	}
	if !providerName.MatchString(name) {
		return nil, &input.Error{Field: field, Reason: "is not a provider name ([a-z0-9-], 1 to 32)"}
	}
	for _, p := range s.providers {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, &NotFoundError{Provider: name}
}

// random is 256 random bits, base64url: a state, a nonce or a PKCE verifier (43 characters,
// within RFC 7636's 43 to 128).
func random() string {
	b := make([]byte, stateBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// StateError: the callback's state is unknown, used, expired or for another sign-in. It maps
// to FailedPrecondition: the callback cannot succeed; beginning again can.
type StateError struct{ Why string }

func (e *StateError) Error() string { return "state " + e.Why }

// NotFoundError: no provider of that name is configured. It maps to NotFound.
type NotFoundError struct{ Provider string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no OpenID provider %q is configured", e.Provider)
}

// NoRoleError: the provider vouched for the person, but none of their claim values maps to a
// role and the provider has no default role. It maps to PermissionDenied.
type NoRoleError struct{ Provider, Claim string }

func (e *NoRoleError) Error() string {
	return fmt.Sprintf("provider %s signed you in, but no value of your %q claim maps to a Plinth role; ask an admin to map one", e.Provider, e.Claim)
}
