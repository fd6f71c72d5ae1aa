package objectstore

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// EncryptionConfig is a store's optional client-side encryption: the key is a reference,
// never a value, like the S3 credentials.
//
//	encryption: {key: {env: PLINTH_CNPGI_KEY}}   # 32 bytes, base64 or raw
type EncryptionConfig struct {
	Key SecretRef `yaml:"key"`
}

// keyIDLen is the length of a key's fingerprint in object headers.
const keyIDLen = 8

// EncryptionKey is a store's AES-256-GCM key. It never prints its bytes: String, GoString
// and LogValue show the fingerprint only.
type EncryptionKey struct {
	id   [keyIDLen]byte
	aead cipher.AEAD
}

// NewEncryptionKey builds a key from 32 raw bytes.
func NewEncryptionKey(key []byte) (*EncryptionKey, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("the encryption key must be 32 bytes (AES-256), base64 or raw; it is %d bytes", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	// The fingerprint is a domain-separated hash, so it says which key wrote an object
	// without helping anyone guess the key.
	sum := sha256.Sum256(append([]byte("plinth cnpgi encryption key id\x00"), key...))
	k := &EncryptionKey{aead: aead}
	copy(k.id[:], sum[:])
	return k, nil
}

// ID is the key's fingerprint, as written in the header of every object it encrypts.
func (k *EncryptionKey) ID() string { return hex.EncodeToString(k.id[:]) }

// String shows the fingerprint only.
func (k *EncryptionKey) String() string { return "aes-256-gcm key " + k.ID() }

// GoString keeps %#v from printing the key schedule.
func (k *EncryptionKey) GoString() string { return k.String() }

// LogValue shows the fingerprint only.
func (k *EncryptionKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// loadKey resolves the key reference. A file may hold the 32 raw bytes; otherwise the
// value is base64 (standard or URL alphabet, padded or not). Errors never quote the value.
func (c *EncryptionConfig) loadKey(env map[string]string) (*EncryptionKey, error) {
	if c.Key.File != "" && c.Key.Env == "" {
		b, err := os.ReadFile(c.Key.File)
		if err != nil {
			return nil, fmt.Errorf("encryption.key: read %s: %w", c.Key.File, err)
		}
		if len(b) == 32 {
			return NewEncryptionKey(b)
		}
	}
	v, err := c.Key.resolve(env)
	if err != nil {
		return nil, fmt.Errorf("encryption.key: %w", err)
	}
	raw, err := decodeKey(strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("encryption.key: %w", err)
	}
	k, err := NewEncryptionKey(raw)
	if err != nil {
		return nil, fmt.Errorf("encryption.key: %w", err)
	}
	return k, nil
}

func decodeKey(v string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	if len(v) == 32 {
		return []byte(v), nil
	}
	return nil, errors.New("not 32 bytes of base64 or raw key material (generate one with: openssl rand -base64 32)")
}

// Seal wraps w so that what is written is encrypted with the store's key; without a key it
// writes through. Close finishes the encrypted stream but does not close w. Call it after
// compression: ciphertext does not compress.
func (n *Named) Seal(w io.Writer) (io.WriteCloser, error) {
	if n.Encryption == nil {
		return nopCloser{w}, nil
	}
	return newSealWriter(w, n.Encryption)
}

// Unseal returns the plaintext of the object key read from r. The header alone says
// whether an object is encrypted, so a store that turns encryption on still reads what it
// wrote before (and what barman wrote). An encrypted object needs the key that wrote it.
func (n *Named) Unseal(r io.Reader, key string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, SealChunkSize+sealTagLen)
	head, err := br.Peek(sealHeaderLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if !isSealed(head) {
		return br, nil
	}
	what := fmt.Sprintf("object %s in store %q", key, n.Name)
	if len(head) < sealHeaderLen {
		return nil, fmt.Errorf("%w: %s: the object is truncated (incomplete header)", ErrDecrypt, what)
	}
	if v := head[len(sealMagic)]; v != sealVersion {
		return nil, fmt.Errorf("%w: %s: unknown encryption format version %d (a newer plugin wrote it)", ErrDecrypt, what, v)
	}
	id := hex.EncodeToString(head[len(sealMagic)+1 : len(sealMagic)+1+keyIDLen])
	if n.Encryption == nil {
		return nil, fmt.Errorf("%w: %s is encrypted (key %s) but the store has no encryption key configured: set stores.%s.encryption.key",
			ErrDecrypt, what, id, n.Name)
	}
	if id != n.Encryption.ID() {
		return nil, fmt.Errorf("%w: %s was encrypted with key %s but the store's key is %s: configure the key it was written with",
			ErrDecrypt, what, id, n.Encryption.ID())
	}
	header := append([]byte(nil), head...)
	if _, err := br.Discard(sealHeaderLen); err != nil {
		return nil, err
	}
	return &sealReader{r: br, aead: n.Encryption.aead, header: header,
		chunk: make([]byte, 0, SealChunkSize+sealTagLen), what: what}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
