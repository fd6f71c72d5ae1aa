package sso

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// Provider is one configured OpenID provider. Its discovery document is read at the first
// sign-in (and again after a failed read), not at start: a provider that is down must not
// keep auth from starting, nor password logins from working.
type Provider struct {
	Name, Label      string
	Issuer, ClientID string
	Scopes           []string
	RedirectURLs     []string
	RoleClaim        string
	Roles            map[string]authz.Role
	DefaultRole      authz.Role
	UsernameClaim    string

	clientSecret string // never logged, never in an error

	mu        sync.Mutex
	endpoints *endpoints // nil until discovered
}

// endpoints is what discovery found: the authorization and token endpoints and the ID token
// verifier, whose key set is the provider's JWKS — fetched again when a token names a key it
// does not hold, which is how a rotated key is found.
type endpoints struct {
	auth, token string
	keys        oidc.KeySet
	algs        []string
}

// httpTimeout bounds every call to a provider (discovery, JWKS, token).
const httpTimeout = 10 * time.Second

// discover returns the provider's endpoints, reading its discovery document once.
func (p *Provider) discover(ctx context.Context, hc *http.Client) (*endpoints, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoints != nil {
		return p.endpoints, nil
	}
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	d, err := client.Discover(ctx, p.Issuer, hc)
	if err != nil {
		return nil, &UnavailableError{Provider: p.Name, Cause: err}
	}
	if d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" || d.JwksURI == "" {
		return nil, &UnavailableError{Provider: p.Name, Cause: errors.New("the discovery document lacks authorization_endpoint, token_endpoint or jwks_uri")}
	}
	p.endpoints = &endpoints{auth: d.AuthorizationEndpoint, token: d.TokenEndpoint,
		keys: rp.NewRemoteKeySet(hc, d.JwksURI), algs: d.IDTokenSigningAlgValuesSupported}
	return p.endpoints, nil
}

// redirectURL is redirect when it is one of the provider's, or its first when redirect is "".
func (p *Provider) redirectURL(redirect string) (string, bool) {
	if redirect == "" {
		return p.RedirectURLs[0], true
	}
	for _, r := range p.RedirectURLs {
		if r == redirect {
			return r, true
		}
	}
	return "", false
}

// oauth2Config is the provider's client for one redirect URL.
func (p *Provider) oauth2Config(e *endpoints, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.clientSecret, RedirectURL: redirect, Scopes: p.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: e.auth, TokenURL: e.token}}
}

// authorizationURL is where the browser goes: the authorization endpoint with the client, the
// redirect URL, the scopes, the state, the nonce and the S256 challenge of verifier.
func (p *Provider) authorizationURL(e *endpoints, redirect, state, nonce, verifier string) string {
	return p.oauth2Config(e, redirect).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("nonce", nonce))
}

// exchange trades the code for the provider's tokens (with the PKCE verifier) and verifies the
// ID token: signed by a key of the provider's JWKS with an algorithm it announced (never
// "none"), its issuer, its audience (our client id, and azp), its expiry and issue time, and
// its nonce. It returns the ID token's claims.
func (p *Provider) exchange(ctx context.Context, hc *http.Client, e *endpoints, code, verifier, redirect, nonce string) (*oidc.IDTokenClaims, error) {
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	tok, err := p.oauth2Config(e, redirect).Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The provider's error code only: its description may echo what we sent.
			return nil, &RefusedError{Provider: p.Name, Why: "the provider refused the code (" + safeCode(re.ErrorCode) + ")"}
		}
		return nil, &UnavailableError{Provider: p.Name, Cause: scrub(err, code)}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, &RefusedError{Provider: p.Name, Why: "the provider's answer has no ID token (is \"openid\" among the scopes?)"}
	}
	v := rp.NewIDTokenVerifier(p.Issuer, p.ClientID, e.keys,
		rp.WithNonce(func(context.Context) string { return nonce }),
		rp.WithSupportedSigningAlgorithms(supportedAlgs(e.algs)...))
	claims, err := rp.VerifyTokens[*oidc.IDTokenClaims](ctx, tok.AccessToken, raw, v)
	if err != nil {
		return nil, &RefusedError{Provider: p.Name, Why: "the ID token " + idTokenProblem(err)}
	}
	return claims, nil
}

// supportedAlgs are the signing algorithms accepted: those the provider announced, without
// "none" (an unsigned token is never accepted); RS256 when it announced none.
func supportedAlgs(announced []string) []string {
	var out []string
	for _, a := range announced {
		if a != "" && !strings.EqualFold(a, "none") {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = []string{"RS256"}
	}
	return out
}

// idTokenProblem says which check an ID token failed, in words a person can act on.
func idTokenProblem(err error) string {
	for _, c := range []struct {
		err  error
		what string
	}{
		{oidc.ErrSignatureUnsupportedAlg, "is not signed with an algorithm the provider announced (unsigned tokens are refused)"},
		{oidc.ErrSignatureMissing, "is not signed"},
		{oidc.ErrSignatureMultiple, "has more than one signature"},
		{oidc.ErrSignatureInvalid, "is not signed by a key of the provider"},
		{oidc.ErrSignatureInvalidPayload, "is not signed by a key of the provider"},
		{oidc.ErrIssuerInvalid, "names another issuer"},
		{oidc.ErrAudience, "is not for this client (audience)"},
		{oidc.ErrAzpMissing, "is for several audiences but names no authorized party"},
		{oidc.ErrAzpInvalid, "names another authorized party"},
		{oidc.ErrExpired, "has expired"},
		{oidc.ErrIatMissing, "has no issue time"},
		{oidc.ErrIatInFuture, "was issued in the future"},
		{oidc.ErrIatToOld, "was issued too long ago"},
		{oidc.ErrNonceInvalid, "does not carry this sign-in's nonce"},
		{oidc.ErrAtHash, "does not match its access token (at_hash)"},
		{oidc.ErrSubjectMissing, "has no subject"},
		{oidc.ErrParse, "is malformed"},
	} {
		if errors.Is(err, c.err) {
			return c.what
		}
	}
	return "is not valid"
}

// safeCode is an OAuth2 error code as the spec allows it (printable ASCII, no quotes or
// backslashes), at most 64 characters; anything else is "error".
func safeCode(s string) string {
	if s == "" || len(s) > 64 {
		return "error"
	}
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return "error"
		}
	}
	return s
}

// scrub is err with the code (a secret until it is used) taken out of its text, and the
// query of any URL in it: a transport error names the token endpoint, never what was sent.
func scrub(err error, code string) error {
	msg := err.Error()
	if code != "" {
		msg = strings.ReplaceAll(msg, code, "[code]")
		msg = strings.ReplaceAll(msg, url.QueryEscape(code), "[code]")
	}
	return errors.New(msg)
}

// UnavailableError: the provider could not be reached or answered nonsense (discovery, JWKS,
// the token endpoint); retrying later may work. It maps to Unavailable.
type UnavailableError struct {
	Provider string
	Cause    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("OpenID provider %s is unavailable: %v", e.Provider, e.Cause)
}

// RefusedError: the provider's answer does not sign anyone in (a refused code, an ID token
// that fails a check). It maps to Unauthenticated; Why says what failed and holds no secret.
type RefusedError struct {
	Provider, Why string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("sign-in with %s refused: %s", e.Provider, e.Why)
}
