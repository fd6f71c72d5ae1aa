// Package identity holds the auth service's rules: users, password hashing, bearer tokens,
// input validation and the brute-force lockout policy. It has no I/O; the store persists it.
package identity

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are the argon2id cost parameters. They are recorded in every encoded hash so
// they can be raised later: a login with an older hash rehashes it with the current ones.
type HashParams struct {
	Memory      uint32 // KiB
	Iterations  uint32
	Parallelism uint8
	SaltLen     uint32
	KeyLen      uint32
}

// DefaultHashParams follow OWASP's argon2id baseline (19 MiB, t=2, p=1): a login costs a few tens
// of milliseconds on one core, which keeps a 2-core control plane responsive under login storms.
func DefaultHashParams() HashParams {
	return HashParams{Memory: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

// Validate rejects parameters too weak to be argon2id in any meaningful sense.
func (p HashParams) Validate() error {
	switch {
	case p.Memory < 8*1024:
		return errors.New("argon2id memory must be at least 8192 KiB")
	case p.Iterations < 1:
		return errors.New("argon2id iterations must be at least 1")
	case p.Parallelism < 1:
		return errors.New("argon2id parallelism must be at least 1")
	case p.SaltLen < 16 || p.KeyLen < 16:
		return errors.New("argon2id salt and key must be at least 16 bytes")
	}
	return nil
}

// HashPassword returns the PHC-format encoding of an argon2id hash of password:
// $argon2id$v=19$m=...,t=...,p=...$<salt>$<key> (unpadded standard base64).
func HashPassword(password string, p HashParams) (string, error) {
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("read random salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.Memory, p.Parallelism, p.KeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Iterations, p.Parallelism, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword reports whether password matches encoded, and whether encoded was made with
// parameters other than current (the caller then stores a fresh hash). The comparison of the
// derived keys is constant-time.
func VerifyPassword(encoded, password string, current HashParams) (ok, needsRehash bool, err error) {
	p, salt, key, err := decodeHash(encoded)
	if err != nil {
		return false, false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.Memory, p.Parallelism, uint32(len(key)))
	ok = subtle.ConstantTimeCompare(got, key) == 1
	needsRehash = p.Memory != current.Memory || p.Iterations != current.Iterations ||
		p.Parallelism != current.Parallelism || uint32(len(key)) != current.KeyLen || uint32(len(salt)) != current.SaltLen
	return ok, needsRehash, nil
}

// errBadHash never carries the hash itself: hashes are secrets too.
var errBadHash = errors.New("stored password hash is not a valid argon2id PHC string")

func decodeHash(encoded string) (HashParams, []byte, []byte, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return HashParams{}, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return HashParams{}, nil, nil, errBadHash
	}
	var p HashParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Iterations, &p.Parallelism); err != nil {
		return HashParams{}, nil, nil, errBadHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return HashParams{}, nil, nil, errBadHash
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) == 0 {
		return HashParams{}, nil, nil, errBadHash
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	return p, salt, key, nil
}
