package oidctest

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// Claims are an ID token's claims as JSON names them.
type Claims map[string]any

// ClaimsOf decodes the claims of a compact JWT without checking anything: tests read what the
// provider issued to make a variant of it.
func ClaimsOf(jwt string) Claims {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var c Claims
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return c
}

// SignIDToken signs claims with the provider's current key, as it signs its own tokens: a
// token whose only fault is in its claims (another audience, an old expiry, another nonce).
func (p *Provider) SignIDToken(c Claims) (string, error) {
	p.st.mu.Lock()
	k := p.st.keys[0]
	p.st.mu.Unlock()
	return SignWith(k.key, k.id, c)
}

// SignWith signs claims with key under kid: with a key that is not the provider's, a forgery.
func SignWith(key *rsa.PrivateKey, kid string, c Claims) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	jws, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// Unsigned is claims as a JWT with "alg": "none" and no signature.
func Unsigned(c Claims) string {
	payload, _ := json.Marshal(c)
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	return head + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}
