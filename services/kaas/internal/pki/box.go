package pki

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// sealVersion prefixes sealed data, so that the format (or the key) can change later.
const sealVersion = 1

// Box seals and opens secrets with AES-256-GCM.
type Box struct{ aead cipher.AEAD }

// ParseKey reads a 32-byte key given as base64 (standard or URL alphabet, padded or not) or
// 64 hex digits.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == 32 {
			return k, nil
		}
	}
	if k, err := hex.DecodeString(s); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, errors.New("want 32 random bytes, base64 or hex encoded (e.g. `openssl rand -base64 32`)")
}

// NewBox seals with key (32 bytes).
func NewBox(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, errors.New("pki: the secret key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; context binds it to its owner (the cluster name), so a sealed
// value copied to another cluster's row does not open.
func (b *Box) Seal(plaintext []byte, context string) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte{sealVersion}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(context)), nil
}

// Open decrypts what Seal made for the same context.
func (b *Box) Open(sealed []byte, context string) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return nil, errors.New("pki: sealed data is malformed")
	}
	pt, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(context))
	if err != nil {
		return nil, errors.New("pki: sealed data does not open with this key (was PLINTH_KAAS_SECRET_KEY changed?)")
	}
	return pt, nil
}

// Vault makes, seals and opens clusters' key material.
type Vault struct{ box *Box }

// NewVault keeps key material sealed with box.
func NewVault(box *Box) *Vault { return &Vault{box: box} }

// New makes a cluster's key material, sealed.
func (v *Vault) New(cluster string) ([]byte, error) {
	c, err := New(cluster)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return v.box.Seal(data, "kaas/cluster/"+cluster)
}

// Open returns the key material of cluster from its sealed form.
func (v *Vault) Open(sealed []byte, cluster string) (*Cluster, error) {
	data, err := v.box.Open(sealed, "kaas/cluster/"+cluster)
	if err != nil {
		return nil, err
	}
	var c Cluster
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("pki: sealed key material of %s: %w", cluster, err)
	}
	return &c, nil
}

// Kubeconfig is a kubeconfig of cluster (API server at endpoint) for a user with a client
// certificate issued now for spec.
func (v *Vault) Kubeconfig(sealed []byte, cluster, endpoint string, spec CertSpec) ([]byte, error) {
	c, err := v.Open(sealed, cluster)
	if err != nil {
		return nil, err
	}
	user, err := c.Issue(spec)
	if err != nil {
		return nil, err
	}
	return KubeconfigFor(c.CA.CertPEM, user, cluster, spec.CommonName, endpoint)
}
