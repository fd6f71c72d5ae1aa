package wal_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

func encKey(t *testing.T, fill byte) *encryption.Key {
	t.Helper()
	k, err := encryption.NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// encryptedEnv is newEnv whose store encrypts with a key of 32 fill bytes.
func encryptedEnv(t *testing.T, kind, comp string, fill byte) *env {
	e := newEnv(t, kind, stores.WALSettings{Compression: comp})
	e.target.Store.Encryption = encKey(t, fill)
	return e
}

// TestEncryptedArchiveRoundTrip: the stored object is ciphertext (no gzip reader, no
// plaintext), restore gives the segment back, and the catalog holds the plaintext digest.
func TestEncryptedArchiveRoundTrip(t *testing.T) {
	for _, kind := range storeKinds {
		for _, comp := range []struct{ name, ext string }{{"gzip", ".gz"}, {"zstd", ".zst"}, {"none", ""}} {
			t.Run(kind+"/"+comp.name, func(t *testing.T) {
				t.Parallel()
				e := encryptedEnv(t, kind, comp.name, 1)
				data := segment(7301234567890123456)
				if err := e.archive(t, e.writeWAL(t, seg1, data, false), nil); err != nil {
					t.Fatal(err)
				}
				stored := e.object(t, "pg-main/wals/0000000100000000/"+seg1+comp.ext)
				if !bytes.HasPrefix(stored, []byte("PLNTHENC")) || bytes.Contains(stored, data[64:128]) {
					t.Fatalf("stored object is not encrypted: starts %q", stored[:16])
				}
				got, err := e.restore(t, seg1, wal.RestoreRecovery)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("restore: %d bytes, %v", len(got), err)
				}
				rec, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", seg1)
				if err != nil || !ok || rec.SystemID != 7301234567890123456 || rec.Size != segSize || rec.StoredSize != int64(len(stored)) {
					t.Fatalf("catalog record %+v %v %v", rec, ok, err)
				}
			})
		}
	}
}

// TestEncryptedArchiveIsIdempotent: archiving the same segment again succeeds although a new
// upload would have other nonces, both from the catalog and, with the catalog lost, by
// decrypting the stored object; other bytes under the name still conflict.
func TestEncryptedArchiveIsIdempotent(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := encryptedEnv(t, kind, "gzip", 1)
			data := segment(42)
			path := e.writeWAL(t, seg1, data, false)
			for range 2 {
				if err := e.archive(t, path, nil); err != nil {
					t.Fatalf("archive: %v", err)
				}
			}
			key := "pg-main/wals/0000000100000000/" + seg1 + ".gz"
			before := e.object(t, key)

			lost := newEnv(t, kind, stores.WALSettings{}) // a fresh catalog
			lost.target.Store = e.target.Store
			if err := lost.archive(t, lost.writeWAL(t, seg1, data, false), nil); err != nil {
				t.Fatalf("archive with the catalog lost: %v", err)
			}
			var conflict *wal.ConflictError
			if err := lost.archive(t, lost.writeWAL(t, seg1, segment(42), false), nil); !errors.As(err, &conflict) {
				t.Fatalf("other bytes: %v, want ConflictError", err)
			}
			if !bytes.Equal(e.object(t, key), before) {
				t.Fatal("the archived object was rewritten")
			}
		})
	}
}

// TestEncryptedRestoreFailsClearly: a wrong or missing key, a tampered or truncated object
// fail with ErrDecrypt naming the store, never write garbage to the destination, and never
// show the key.
func TestEncryptedRestoreFailsClearly(t *testing.T) {
	e := encryptedEnv(t, "posix", "gzip", 1)
	data := segment(42)
	if err := e.archive(t, e.writeWAL(t, seg1, data, false), nil); err != nil {
		t.Fatal(err)
	}
	key := "pg-main/wals/0000000100000000/" + seg1 + ".gz"
	good := e.object(t, key)
	store := e.target.Store
	reader := func(k *encryption.Key) *stores.Named {
		return &stores.Named{Name: store.Name, Kind: store.Kind, Store: store.Store, WAL: store.WAL, Encryption: k}
	}
	cases := []struct {
		name   string
		store  *stores.Named
		object []byte
		want   string
	}{
		{"wrong key", reader(encKey(t, 2)), good, "configure the key it was written with"},
		{"no key", reader(nil), good, "no encryption key configured"},
		{"tampered", store, append(append([]byte(nil), good[:len(good)/2]...), append([]byte{good[len(good)/2] ^ 0x40}, good[len(good)/2+1:]...)...), "fails authentication"},
		{"truncated", store, good[:len(good)-20], "fails authentication"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.put(t, key, c.object)
			e.target.Store = c.store
			defer func() { e.target.Store = store }()
			_, err := e.restore(t, seg1, wal.RestoreRewind)
			if !errors.Is(err, stores.ErrDecrypt) || !strings.Contains(err.Error(), `store "main"`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrDecrypt naming store main and %q", err, c.want)
			}
			for _, secret := range []string{string(bytes.Repeat([]byte{1}, 32)), hex.EncodeToString(bytes.Repeat([]byte{1}, 32)), "AQEBAQEB"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("key material in the error: %v", err)
				}
			}
		})
	}
}

// TestKeyRotation: after the store's key is rotated (new key, old one among previousKeys),
// WAL written with the old key still restores, archiving it again is still idempotent, and
// new WAL is written with the new key; dropping the old key makes the old WAL fail clearly.
func TestKeyRotation(t *testing.T) {
	e := encryptedEnv(t, "posix", "gzip", 1)
	old := e.target.Store.Encryption
	data := segment(9)
	path := e.writeWAL(t, seg1, data, false)
	if err := e.archive(t, path, nil); err != nil {
		t.Fatal(err)
	}
	e.target.Store.Encryption, e.target.Store.PreviousKeys = encKey(t, 2), []*encryption.Key{old}
	if got, err := e.restore(t, seg1, wal.RestoreRewind); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("restore of WAL written with the previous key: %v", err)
	}
	if err := e.catalog.DeleteWAL(ctxT(t), "main", "pg-main", []string{seg1}); err != nil { // compare with the object itself
		t.Fatal(err)
	}
	if err := e.archive(t, path, nil); err != nil {
		t.Fatalf("archiving again after the rotation: %v", err)
	}
	const seg2 = "000000010000000000000002"
	if err := e.archive(t, e.writeWAL(t, seg2, segment(9), false), nil); err != nil {
		t.Fatal(err)
	}
	if hdr := encryption.ReadHeader(e.object(t, "pg-main/wals/0000000100000000/"+seg2+".gz")); hdr.KeyID != e.target.Store.Encryption.ID() {
		t.Fatalf("new WAL written with key %s", hdr.KeyID)
	}
	e.target.Store.PreviousKeys = nil
	if _, err := e.restore(t, seg1, wal.RestoreRewind); !errors.Is(err, stores.ErrDecrypt) || !strings.Contains(err.Error(), old.ID()) {
		t.Fatalf("without the previous key: %v", err)
	}
}
