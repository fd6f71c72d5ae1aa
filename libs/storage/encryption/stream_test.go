package encryption_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/encryption"
)

func testKey(t *testing.T, fill byte) *encryption.Key {
	t.Helper()
	k, err := encryption.NewKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func seal(t *testing.T, k *encryption.Key, plain []byte, writeSize int) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := encryption.NewWriter(&out, k)
	if err != nil {
		t.Fatal(err)
	}
	for p := plain; len(p) > 0; {
		n := min(writeSize, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func unseal(sealed []byte, keys ...*encryption.Key) ([]byte, error) {
	r, _, err := encryption.NewReader(bytes.NewReader(sealed), keys...)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestRoundTripsEveryChunkBoundary(t *testing.T) {
	k := testKey(t, 1)
	const c = encryption.ChunkSize
	sizes := []int{0, 1, 15, 16, 17, c - 1, c, c + 1, 2*c - 1, 2 * c, 2*c + 1, 3 * c, 5*c + 12345}
	for _, size := range sizes {
		plain := make([]byte, size)
		_, _ = rand.Read(plain)
		for _, ws := range []int{1 << 20, c, 4096, 7} {
			if size > 3*c && ws == 7 {
				continue // slow and adds nothing over 4096
			}
			sealed := seal(t, k, plain, ws)
			if want := encryption.EncryptedSize(int64(size)); int64(len(sealed)) != want {
				t.Fatalf("size %d: sealed %d bytes, want %d (header + data + one tag per chunk)", size, len(sealed), want)
			}
			got, err := unseal(sealed, k)
			if err != nil {
				t.Fatalf("size %d write %d: %v", size, ws, err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("size %d write %d: round trip changed the bytes", size, ws)
			}
		}
	}
}

func TestFreshNonces(t *testing.T) {
	k := testKey(t, 1)
	a, b := seal(t, k, []byte("same bytes"), 100), seal(t, k, []byte("same bytes"), 100)
	if bytes.Equal(a, b) {
		t.Fatal("two encryptions of the same bytes are identical: the nonce is not random")
	}
	if bytes.Contains(a, []byte("same bytes")) {
		t.Fatal("plaintext visible in the sealed stream")
	}
}

func TestDetectsDamage(t *testing.T) {
	k := testKey(t, 1)
	const c = encryption.ChunkSize
	const h = encryption.HeaderSize
	plain := make([]byte, 3*c+100)
	_, _ = rand.Read(plain)
	sealed := seal(t, k, plain, 1<<20)
	chunk := c + encryption.TagSize
	swap := append([]byte(nil), sealed...)
	copy(swap[h:], sealed[h+chunk:h+2*chunk])
	copy(swap[h+chunk:], sealed[h:h+chunk])
	flip := func(i int) []byte { b := append([]byte(nil), sealed...); b[i] ^= 1; return b }
	cases := map[string][]byte{
		"cut at a chunk boundary": sealed[:h+2*chunk],
		"cut mid chunk":           sealed[:h+chunk+100],
		"cut after the header":    sealed[:h],
		"cut inside the header":   sealed[:20],
		"last byte dropped":       sealed[:len(sealed)-1],
		"byte appended":           append(append([]byte(nil), sealed...), 0),
		"ciphertext flipped":      flip(h + chunk + 7),
		"tag flipped":             flip(len(sealed) - 1),
		"nonce flipped":           flip(20),
		"key id flipped":          flip(10),
		"version changed":         flip(8),
		"chunks reordered":        swap,
	}
	for name, damaged := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := unseal(damaged, k); !errors.Is(err, encryption.ErrDecrypt) {
				t.Fatalf("got %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestKeyErrorsNameTheKeys(t *testing.T) {
	writer := testKey(t, 1)
	sealed := seal(t, writer, []byte("wal bytes"), 100)
	other := testKey(t, 2)
	for name, keys := range map[string][]*encryption.Key{"wrong key": {other}, "no key": nil} {
		t.Run(name, func(t *testing.T) {
			_, err := unseal(sealed, keys...)
			var ke *encryption.KeyError
			if !errors.Is(err, encryption.ErrDecrypt) || !errors.As(err, &ke) || ke.KeyID != writer.ID() {
				t.Fatalf("got %v, want a KeyError naming %s", err, writer.ID())
			}
			if !strings.Contains(err.Error(), writer.ID()) || (len(keys) > 0 && !strings.Contains(err.Error(), other.ID())) {
				t.Fatalf("error %q does not name the keys", err)
			}
		})
	}
}

// TestRotation: a reader holding several keys reads what each of them wrote.
func TestRotation(t *testing.T) {
	old, cur := testKey(t, 1), testKey(t, 2)
	for _, k := range []*encryption.Key{old, cur} {
		got, err := unseal(seal(t, k, []byte("segment"), 3), cur, old)
		if err != nil || string(got) != "segment" {
			t.Fatalf("key %s: %q %v", k.ID(), got, err)
		}
		_, hdr, err := encryption.NewReader(bytes.NewReader(seal(t, k, nil, 1)), cur, old)
		if err != nil || !hdr.Encrypted || hdr.KeyID != k.ID() {
			t.Fatalf("header %+v %v", hdr, err)
		}
	}
}

func TestPlaintextPassesThrough(t *testing.T) {
	// Objects written before encryption was turned on (or by other tools) stay readable.
	k := testKey(t, 1)
	for _, plain := range [][]byte{nil, []byte("x"), []byte("PLNTHEN"), bytes.Repeat([]byte{0x1f, 0x8b}, 40000)} {
		r, hdr, err := encryption.NewReader(bytes.NewReader(plain), k)
		if err != nil || hdr.Encrypted {
			t.Fatalf("plaintext of %d bytes: %+v %v", len(plain), hdr, err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("plaintext of %d bytes: got %d bytes, %v", len(plain), len(got), err)
		}
	}
}

func TestReadHeader(t *testing.T) {
	k := testKey(t, 3)
	sealed := seal(t, k, []byte("x"), 1)
	if h := encryption.ReadHeader(sealed); !h.Encrypted || h.KeyID != k.ID() {
		t.Fatalf("%+v", h)
	}
	if h := encryption.ReadHeader([]byte("plain text that is long enough")); h.Encrypted {
		t.Fatalf("%+v", h)
	}
}
