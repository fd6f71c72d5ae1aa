package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix marks Plinth bearer tokens so that secret scanners and humans recognise them.
const TokenPrefix = "plt_"

// tokenBytes is the token's entropy: 256 bits.
const tokenBytes = 32

// NewToken returns a fresh opaque bearer token: the prefix and 256 random bits, base64url.
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// TokenID is the only form in which a token is stored, logged or published: the hex SHA-256 of
// the token. A fast hash is right here (unlike passwords): the input has 256 bits of entropy,
// so it cannot be guessed, and CheckToken must be cheap.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LooksLikeToken is a cheap syntactic filter applied before any lookup: wrong prefix or length
// can never be a token we issued.
func LooksLikeToken(token string) bool {
	// The length is checked before decoding: a token is exactly this long, and decoding
	// whatever a client sends costs work proportional to it.
	if len(token) != len(TokenPrefix)+base64.RawURLEncoding.EncodedLen(tokenBytes) || !strings.HasPrefix(token, TokenPrefix) {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[len(TokenPrefix):])
	return err == nil && len(raw) == tokenBytes
}
