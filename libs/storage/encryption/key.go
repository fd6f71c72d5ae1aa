// Package encryption is a streaming authenticated encryption format for stored objects:
// AES-256-GCM in 64 KiB chunks behind a small header that names the key by fingerprint, so
// that truncation, reordering, bit flips and a wrong key are detected, a stream of any
// length is processed in constant memory, and a reader holding several keys (rotation)
// picks the one that wrote the object.
package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/plinth-dev/plinth/libs/storage/secret"
)

// KeySize is the size of an AES-256 key.
const KeySize = 32

// keyIDLen is the length of a key's fingerprint in headers.
const keyIDLen = 8

// Key is an AES-256-GCM key. It never prints its bytes: String, GoString and LogValue show
// the fingerprint only.
type Key struct {
	id   [keyIDLen]byte
	aead cipher.AEAD
}

// NewKey builds a key from 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("the encryption key must be %d bytes (AES-256), base64 or raw; it is %d bytes", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	// The fingerprint is a domain-separated hash, so it says which key wrote an object
	// without helping anyone guess the key. (The label predates this library: objects
	// already written carry fingerprints computed with it.)
	sum := sha256.Sum256(append([]byte("plinth cnpgi encryption key id\x00"), raw...))
	k := &Key{aead: aead}
	copy(k.id[:], sum[:])
	return k, nil
}

// ParseKey decodes a key given as text: 32 bytes in base64 (standard or URL alphabet,
// padded or not), or 32 raw characters. Errors never quote the value.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return NewKey(b)
		}
	}
	if len(s) == KeySize {
		return NewKey([]byte(s))
	}
	return nil, errors.New("not 32 bytes of base64 or raw key material (generate one with: openssl rand -base64 32)")
}

// LoadKey resolves a key reference: a file may hold the 32 raw bytes; otherwise the value
// (file or environment variable) is parsed by ParseKey.
func LoadKey(ref secret.Ref, env map[string]string) (*Key, error) {
	if ref.File != "" && ref.Env == "" {
		b, err := os.ReadFile(ref.File)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref.File, err)
		}
		if len(b) == KeySize {
			return NewKey(b)
		}
	}
	v, err := ref.Resolve(env)
	if err != nil {
		return nil, err
	}
	return ParseKey(v)
}

// ID is the key's fingerprint, as written in the header of every stream it encrypts.
func (k *Key) ID() string { return hex.EncodeToString(k.id[:]) }

// String shows the fingerprint only.
func (k *Key) String() string { return "aes-256-gcm key " + k.ID() }

// GoString keeps %#v from printing the key schedule.
func (k *Key) GoString() string { return k.String() }

// LogValue shows the fingerprint only.
func (k *Key) LogValue() slog.Value { return slog.StringValue(k.String()) }
