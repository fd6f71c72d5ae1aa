// Package tokens implements the Vagrant server's token protocol exactly as upstream
// (hashicorp/vagrant internal/server/singleprocess/auth.go, inherited from Waypoint): a
// Token message, marshalled, signed with a keyed BLAKE2b-256 MAC under a server key
// (HMACKey), wrapped in a TokenTransport with the key id, prefixed with the magic "wp24" and
// armoured in base58 (Bitcoin alphabet). Tokens issued by upstream servers and by this one
// are interchangeable given the same key.
package tokens

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/mr-tron/base58"
	"golang.org/x/crypto/blake2b"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

const (
	// Magic prefixes the marshalled TokenTransport before armouring (upstream's tokenMagic).
	Magic = "wp24"
	// DefaultUser is the only user upstream's single-user server knows; every token is its.
	DefaultUser = "vagrant"
	// DefaultKeyID names the key every token is signed with (upstream's DefaultKeyId).
	DefaultKeyID = "k1"
	// KeySize is the size of a signing key: 32 random bytes, as upstream.
	KeySize = 32
	// tokenIDSize is the random token_id (a nonce): 16 bytes, as upstream.
	tokenIDSize = 16
	// MaxLen bounds a token's length, checked before anything else: base58 decoding costs
	// the square of the length (a 4 KiB token takes ~9 ms of CPU, a 1 MB one minutes), and
	// tokens are checked before the caller is known. A token this server issues is about 200
	// bytes; invite metadata leaves room for more.
	MaxLen = 1024
)

var (
	// ErrInvalid is matched by every reason a token is refused except expiry.
	ErrInvalid = errors.New("invalid authentication token")
	// ErrExpired is a well-signed token past its valid_until.
	ErrExpired = errors.New("token has expired")
)

// Sign armours body signed with key, whose id is keyID. metadata travels outside the signed
// body (upstream: "configuration style metadata").
func Sign(keyID string, key []byte, metadata map[string]string, body *vagrant.Token) (string, error) {
	data, err := proto.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("marshal token: %w", err)
	}
	sig, err := mac(key, data)
	if err != nil {
		return "", err
	}
	return Armour(&vagrant.TokenTransport{Body: data, Signature: sig, KeyId: keyID, Metadata: metadata})
}

// Armour is a transport as a token: Magic and the marshalled transport, in base58 (Parse
// undoes it).
func Armour(tt *vagrant.TokenTransport) (string, error) {
	raw, err := proto.Marshal(tt)
	if err != nil {
		return "", fmt.Errorf("marshal token transport: %w", err)
	}
	return base58.Encode(append([]byte(Magic), raw...)), nil
}

// Parse removes the armour and returns the transport, not yet verified: its key id says
// which key verifies it.
func Parse(token string) (*vagrant.TokenTransport, error) {
	if len(token) > MaxLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxLen)
	}
	data, err := base58.Decode(token)
	if err != nil || len(data) < len(Magic) {
		return nil, fmt.Errorf("%w: not base58", ErrInvalid)
	}
	if subtle.ConstantTimeCompare(data[:len(Magic)], []byte(Magic)) != 1 {
		return nil, fmt.Errorf("%w: bad magic", ErrInvalid)
	}
	var tt vagrant.TokenTransport
	if err := proto.Unmarshal(data[len(Magic):], &tt); err != nil {
		return nil, fmt.Errorf("%w: malformed transport", ErrInvalid)
	}
	return &tt, nil
}

// Verify checks the transport's signature with key and returns the body, refusing it after
// its valid_until (a body without one is valid forever, as upstream's login tokens).
func Verify(tt *vagrant.TokenTransport, key []byte, now time.Time) (*vagrant.Token, error) {
	sig, err := mac(key, tt.GetBody())
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(sig, tt.GetSignature()) != 1 {
		return nil, fmt.Errorf("%w: bad signature", ErrInvalid)
	}
	var body vagrant.Token
	if err := proto.Unmarshal(tt.GetBody(), &body); err != nil {
		return nil, fmt.Errorf("%w: malformed body", ErrInvalid)
	}
	if body.ValidUntil != nil && body.ValidUntil.AsTime().Before(now) {
		return nil, ErrExpired
	}
	return &body, nil
}

// mac is upstream's "HMAC": BLAKE2b-256 keyed with the signing key.
func mac(key, data []byte) ([]byte, error) {
	h, err := blake2b.New256(key)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	h.Write(data)
	return h.Sum(nil), nil
}
