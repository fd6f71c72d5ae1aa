// Package sso signs people in through OpenID Connect providers: the authorization code flow
// with PKCE (S256), a state and a nonce, the code exchanged with the client secret, the ID
// token verified against the provider's JWKS found by discovery (signature, issuer, audience,
// expiry, nonce), and the provider's claims mapped to a Plinth role. The person it vouches for
// gets a Plinth token from identity.Service.SignInExternal, exactly as a password login's.
package sso

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// ProvidersFile is the JSON document PLINTH_AUTH_OIDC_PROVIDERS_FILE names.
type ProvidersFile struct {
	Providers []ProviderConfig `json:"providers"`
}

// ProviderConfig is one OpenID provider as configured (services/auth/README.md, "OpenID
// Connect sign-in").
type ProviderConfig struct {
	// Name is the provider in URLs and in users' rows: [a-z0-9-], 1 to 32 characters.
	Name string `json:"name"`
	// Label is what a sign-in button says; empty: Name.
	Label string `json:"label"`
	// Issuer is the provider's issuer URL; its /.well-known/openid-configuration is read.
	Issuer string `json:"issuer"`
	// ClientID and the file holding the client secret (never in the configuration itself).
	ClientID         string `json:"client_id"`
	ClientSecretFile string `json:"client_secret_file"`
	// Scopes asked for; "openid" is always among them. Empty: openid, profile, email.
	Scopes []string `json:"scopes"`
	// RedirectURLs are the callback URLs registered at the provider: the gateway's
	// /auth/oidc/callback and Koor's /api/oauth2/callback/<name>. A sign-in names one.
	RedirectURLs []string `json:"redirect_urls"`
	// RoleClaim is the ID token claim whose values map to roles (a string or a list of
	// strings); empty: "groups".
	RoleClaim string `json:"role_claim"`
	// Roles maps a value of RoleClaim to a role (viewer, operator, admin); of several that
	// match, the strongest wins.
	Roles map[string]string `json:"roles"`
	// DefaultRole is the role of a person no value maps; empty: such a person is refused.
	DefaultRole string `json:"default_role"`
	// UsernameClaim is the claim a new user's username is made from; empty:
	// preferred_username (then the email's local part).
	UsernameClaim string `json:"username_claim"`
}

var providerName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// LoadProviders reads the providers file at path and each provider's client secret, and checks
// everything: errors name the provider and the field, never a secret.
func LoadProviders(path string) ([]*Provider, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the providers file: %w", err)
	}
	var f ProvidersFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Providers) == 0 {
		return nil, fmt.Errorf("%s: no providers", path)
	}
	var out []*Provider
	var errs []error
	for i, c := range f.Providers {
		p, err := c.provider()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: providers[%d] (%q): %w", path, i, c.Name, err))
			continue
		}
		if slices.ContainsFunc(out, func(q *Provider) bool { return q.Name == p.Name }) {
			errs = append(errs, fmt.Errorf("%s: providers[%d]: name %q twice", path, i, c.Name))
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// provider checks c and reads its secret.
func (c ProviderConfig) provider() (*Provider, error) {
	p := &Provider{Name: c.Name, Label: c.Label, Issuer: c.Issuer, ClientID: c.ClientID, RedirectURLs: c.RedirectURLs,
		RoleClaim: c.RoleClaim, UsernameClaim: c.UsernameClaim, Roles: map[string]authz.Role{}}
	var errs []error
	if !providerName.MatchString(c.Name) {
		errs = append(errs, errors.New("name: 1 to 32 characters of [a-z0-9-]"))
	}
	if p.Label == "" {
		p.Label = c.Name
	}
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, errors.New("issuer: an http(s) URL"))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("client_id: required"))
	}
	if c.ClientSecretFile == "" {
		errs = append(errs, errors.New("client_secret_file: required"))
	} else if b, err := os.ReadFile(c.ClientSecretFile); err != nil {
		errs = append(errs, fmt.Errorf("client_secret_file: %w", err))
	} else if p.clientSecret = strings.TrimSpace(string(b)); p.clientSecret == "" {
		errs = append(errs, fmt.Errorf("client_secret_file: %s is empty", c.ClientSecretFile))
	}
	p.Scopes = c.Scopes
	if len(p.Scopes) == 0 {
		p.Scopes = []string{"openid", "profile", "email"}
	}
	if !slices.Contains(p.Scopes, "openid") {
		p.Scopes = append([]string{"openid"}, p.Scopes...)
	}
	if len(c.RedirectURLs) == 0 {
		errs = append(errs, errors.New("redirect_urls: at least one (the gateway's /auth/oidc/callback)"))
	}
	for _, r := range c.RedirectURLs {
		if u, err := url.Parse(r); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("redirect_urls: %q is not an absolute http(s) URL without a fragment", r))
		}
	}
	if p.RoleClaim == "" {
		p.RoleClaim = "groups"
	}
	if p.UsernameClaim == "" {
		p.UsernameClaim = "preferred_username"
	}
	for v, r := range c.Roles {
		role, err := authz.ParseRole(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("roles[%q]: %w", v, err))
		}
		p.Roles[v] = role
	}
	if c.DefaultRole != "" {
		role, err := authz.ParseRole(c.DefaultRole)
		if err != nil {
			errs = append(errs, fmt.Errorf("default_role: %w", err))
		}
		p.DefaultRole = role
	}
	if len(c.Roles) == 0 && c.DefaultRole == "" {
		errs = append(errs, errors.New("roles, default_role: at least one, or nobody could sign in"))
	}
	return p, errors.Join(errs...)
}
