package stores

import (
	"errors"
	"fmt"
	"io"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
)

// ErrDecrypt: an encrypted object could not be decrypted: wrong or missing key, or the
// object was truncated, reordered or tampered with.
var ErrDecrypt = encryption.ErrDecrypt

// loadKeys resolves the writing key and the previous keys. Errors name the reference,
// never the value.
func (n *Named) loadKeys(c *EncryptionConfig, env map[string]string) error {
	k, err := encryption.LoadKey(c.Key, env)
	if err != nil {
		return fmt.Errorf("encryption.key: %w", err)
	}
	n.Encryption = k
	for i, ref := range c.PreviousKeys {
		old, err := encryption.LoadKey(ref, env)
		if err != nil {
			return fmt.Errorf("encryption.previousKeys[%d]: %w", i, err)
		}
		n.PreviousKeys = append(n.PreviousKeys, old)
	}
	return nil
}

// Keys are every key the store reads with: the writing key first, then the previous ones.
func (n *Named) Keys() []*encryption.Key {
	if n.Encryption == nil {
		return n.PreviousKeys
	}
	return append([]*encryption.Key{n.Encryption}, n.PreviousKeys...)
}

// Seal wraps w so that what is written is encrypted with the store's key; without a key it
// writes through. Close finishes the encrypted stream but does not close w. Call it after
// compression: ciphertext does not compress.
func (n *Named) Seal(w io.Writer) (io.WriteCloser, error) {
	if n.Encryption == nil {
		return nopCloser{w}, nil
	}
	return encryption.NewWriter(w, n.Encryption)
}

// Unseal returns the plaintext of the object key read from r. The header alone says
// whether an object is encrypted, so a store that turns encryption on still reads what it
// wrote before (and what barman wrote). An encrypted object needs one of the store's keys;
// errors name the store, the object and the keys, and wrap ErrDecrypt.
func (n *Named) Unseal(r io.Reader, key string) (io.Reader, error) {
	plain, _, err := encryption.NewReader(r, n.Keys()...)
	if err != nil {
		return nil, n.decryptErr(key, err)
	}
	return errorContext{plain, func(err error) error { return n.decryptErr(key, err) }}, nil
}

func (n *Named) decryptErr(key string, err error) error {
	if !errors.Is(err, encryption.ErrDecrypt) {
		return err
	}
	var ke *encryption.KeyError
	if errors.As(err, &ke) && len(ke.Have) == 0 {
		return fmt.Errorf("object %s in store %q: %w: set stores.%s.encryption.key", key, n.Name, err, n.Name)
	}
	return fmt.Errorf("object %s in store %q: %w", key, n.Name, err)
}

// errorContext adds the object's name to the errors of a stream.
type errorContext struct {
	r    io.Reader
	wrap func(error) error
}

func (e errorContext) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		err = e.wrap(err)
	}
	return n, err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
