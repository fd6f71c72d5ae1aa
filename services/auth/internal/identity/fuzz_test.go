package identity

import (
	"strings"
	"testing"
)

// FuzzLooksLikeToken: whatever a client sends as a bearer token, the check never panics,
// accepts only well-formed tokens, and does work bounded by the token's fixed length.
func FuzzLooksLikeToken(f *testing.F) {
	tok, err := NewToken()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{tok, "", TokenPrefix, TokenPrefix + "!!", tok + "=", strings.Repeat("A", 100), tok[:len(tok)-1] + "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if LooksLikeToken(s) && (len(s) != len(tok) || !strings.HasPrefix(s, TokenPrefix)) {
			t.Fatalf("accepted %q", s)
		}
	})
}

// FuzzValidateUser: usernames and passwords from clients are validated without panics, and an
// accepted username is within the documented bounds.
func FuzzValidateUser(f *testing.F) {
	for _, s := range []string{"admin", "a", "bad name", "ünïcode", strings.Repeat("x", 200), "a\x00b"} {
		f.Add(s, "password123")
	}
	f.Fuzz(func(t *testing.T, name, password string) {
		if err := ValidateUsername(name); err == nil && (len(name) < 3 || len(name) > 24) {
			t.Fatalf("accepted username %q", name)
		}
		_ = ValidatePassword(password)
	})
}
