package pki

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// MinMachineKeyBits is the smallest RSA machine key kaas seals to: 3072 bits (NIST's level
// for keys that protect secrets past 2030) and room for the 192 bytes it wraps.
const MinMachineKeyBits = 3072

// Sealed is a message sealed for one machine's RSA key, opened there with Debian's openssl
// and coreutils alone (see vagrant's bootstrap script):
//
//   - Wrapped: RSA-OAEP (SHA-256, MGF1-SHA-256) of 64 hex digits of a random 256-bit
//     passphrase, then the 64-byte HMAC-SHA-256 inner and outer pads of a random 256-bit MAC
//     key (RFC 2104's K⊕ipad and K⊕opad). The pads, not the key, travel so that the machine
//     computes the HMAC with `openssl dgst -sha256` over files: no key is ever a command-line
//     argument, which other local users could read in /proc.
//   - Ciphertext: `openssl enc -aes-256-ctr -pbkdf2 -iter 1 -md sha256 -pass file:…`'s output
//     ("Salted__", 8 random bytes of salt, AES-256-CTR with key and IV from PBKDF2). One
//     iteration suffices: the passphrase is random, not a password.
//   - MAC: hex HMAC-SHA-256 of Ciphertext (encrypt-then-MAC), checked before decrypting.
type Sealed struct {
	Wrapped, Ciphertext []byte
	MAC                 string
}

// ParseMachineKey finds the PEM public key a machine printed (any other output around it is
// ignored) and checks that it is an RSA key kaas seals to.
func ParseMachineKey(output string) (*rsa.PublicKey, error) {
	start := strings.Index(output, "-----BEGIN PUBLIC KEY-----")
	if start < 0 {
		return nil, errors.New("the machine printed no public key")
	}
	b, _ := pem.Decode([]byte(output[start:]))
	if b == nil {
		return nil, errors.New("the machine's public key is not valid PEM")
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the machine's public key does not parse: %w", err)
	}
	rk, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("the machine's key is a %T, not RSA", pub)
	}
	if rk.N.BitLen() < MinMachineKeyBits {
		return nil, fmt.Errorf("the machine's RSA key has %d bits; at least %d are needed", rk.N.BitLen(), MinMachineKeyBits)
	}
	return rk, nil
}

// MachineKeyPEM is pub as PEM, how a machine's key is kept between passes.
func MachineKeyPEM(pub *rsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// SealFor seals plaintext for the holder of pub's private key (see Sealed).
func SealFor(pub *rsa.PublicKey, plaintext []byte) (Sealed, error) {
	secret := make([]byte, 32+32+8) // passphrase, MAC key, salt
	if _, err := rand.Read(secret); err != nil {
		return Sealed{}, err
	}
	pass, macKey, salt := []byte(hex.EncodeToString(secret[:32])), secret[32:64], secret[64:]
	ipad, opad := hmacPads(macKey)
	wrapped, err := rsa.EncryptOAEP(sha256.New(), rand.Reader, pub, append(append(append([]byte{}, pass...), ipad...), opad...), nil)
	if err != nil {
		return Sealed{}, fmt.Errorf("wrap the keys for the machine: %w", err)
	}
	// openssl enc -pbkdf2: key and IV are the first 32 and next 16 bytes of PBKDF2-HMAC-SHA256.
	kiv, err := pbkdf2.Key(sha256.New, string(pass), salt, 1, 48)
	if err != nil {
		return Sealed{}, err
	}
	block, err := aes.NewCipher(kiv[:32])
	if err != nil {
		return Sealed{}, err
	}
	ct := make([]byte, 16+len(plaintext))
	copy(ct, "Salted__")
	copy(ct[8:], salt)
	cipher.NewCTR(block, kiv[32:48]).XORKeyStream(ct[16:], plaintext)
	mac := hmac.New(sha256.New, macKey)
	mac.Write(ct)
	return Sealed{Wrapped: wrapped, Ciphertext: ct, MAC: hex.EncodeToString(mac.Sum(nil))}, nil
}

// hmacPads are RFC 2104's inner and outer pads of key (at most one SHA-256 block long).
func hmacPads(key []byte) (ipad, opad []byte) {
	ipad, opad = make([]byte, sha256.BlockSize), make([]byte, sha256.BlockSize)
	copy(ipad, key)
	copy(opad, key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	return ipad, opad
}
