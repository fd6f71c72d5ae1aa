// Package redact decides which log attributes and configuration values are secret and masks
// them, so that passwords, tokens and keys never reach logs or printed configuration.
//
// It has no dependencies beyond the standard library so that both config and telemetry can
// share one set of rules.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Placeholder replaces a whole secret value.
const Placeholder = "[REDACTED]"

// urlPasswordMask replaces only the password inside a URL's userinfo; it matches what
// net/url.URL.Redacted writes so masked URLs look the same everywhere.
const urlPasswordMask = "xxxxx"

// secretWords are matched against a key lower-cased with separators removed, so "api_key",
// "API-Key" and "apiKey" all normalise to "apikey". Over-redaction (e.g. "token_count") is
// accepted: a hidden counter is cheap, a leaked token is not.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "authorization",
	"cookie", "credential", "creds", "bearer", "apikey", "privatekey",
}

// IsSecretKey reports whether an attribute or setting named key must never be written in
// clear: it contains password, passwd, passphrase, secret, token, authorization, cookie,
// credential, creds, bearer, apikey or privatekey (ignoring case and the separators "_", "-", "."
// and " "), is "pwd", or ends with "key"/"keys" (access_key, encryptionKey, ssh_keys).
func IsSecretKey(key string) bool {
	k := normalise(key)
	for _, suffix := range settingSuffixes {
		if strings.HasSuffix(k, suffix) {
			return false // a setting or a fact about a secret (token_ttl), not the secret
		}
	}
	if k == "pwd" || strings.HasSuffix(k, "key") || strings.HasSuffix(k, "keys") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func normalise(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range strings.ToLower(key) {
		switch r {
		case '_', '-', '.', ' ':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// settingSuffixes end keys that name durations, counts and flags about secrets rather than
// secrets, e.g. PLINTH_AUTH_TOKEN_TTL or password_generated: redacting them only hides what an
// operator needs to see.
var settingSuffixes = []string{"ttl", "count", "generated", "expiry", "length"}

var (
	// userinfoPassword finds "scheme://user:password@" anywhere in a text. The password part
	// stops at whitespace or "@" so a message holding several URLs is masked URL by URL.
	userinfoPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:)[^\s@]*@`)
	// keywordPassword finds libpq keyword/value DSN passwords ("password=... host=...").
	keywordPassword = regexp.MustCompile(`(?i)\b(password|passwd|pwd)\s*=\s*('[^']*'|"[^"]*"|\S+)`)
)

// Text masks credentials embedded in free text: URL passwords ("postgres://u:xxxxx@h/db")
// and keyword DSN passwords ("password=xxxxx"). Text without credentials is returned as is.
func Text(s string) string {
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		s = userinfoPassword.ReplaceAllString(s, "${1}"+urlPasswordMask+"@")
	}
	if strings.Contains(s, "=") {
		s = keywordPassword.ReplaceAllString(s, "${1}="+urlPasswordMask)
	}
	return s
}

// URL returns s with the password of its userinfo masked when s is a URL with a host (for
// example a database or NATS URL). Anything that is not such a URL, including keyword/value
// DSNs, is replaced entirely by Placeholder, because its secret parts cannot be located
// reliably. Empty input stays empty so that "unset" remains visible.
func URL(s string) string {
	if s == "" {
		return ""
	}
	var masked []string
	// NATS accepts a comma-separated list of server URLs; mask each one.
	for _, part := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
			return Placeholder
		}
		// Text also masks a password passed as a query parameter (postgres://h/db?password=...).
		masked = append(masked, Text(u.Redacted()))
	}
	return strings.Join(masked, ",")
}
