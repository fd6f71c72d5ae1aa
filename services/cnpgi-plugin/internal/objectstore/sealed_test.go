package objectstore_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

func testKey(t *testing.T, fill byte) *objectstore.EncryptionKey {
	t.Helper()
	k, err := objectstore.NewEncryptionKey(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func seal(t *testing.T, n *objectstore.Named, plain []byte, writeSize int) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := n.Seal(&out)
	if err != nil {
		t.Fatal(err)
	}
	for p := plain; len(p) > 0; {
		k := min(writeSize, len(p))
		if _, err := w.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func unseal(n *objectstore.Named, sealed []byte) ([]byte, error) {
	r, err := n.Unseal(bytes.NewReader(sealed), "srv/wals/x")
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestSealRoundTripsEveryChunkBoundary(t *testing.T) {
	n := &objectstore.Named{Name: "vault", Encryption: testKey(t, 1)}
	const c = objectstore.SealChunkSize
	sizes := []int{0, 1, 15, 16, 17, c - 1, c, c + 1, 2*c - 1, 2 * c, 2*c + 1, 3 * c, 5*c + 12345}
	for _, size := range sizes {
		plain := make([]byte, size)
		_, _ = rand.Read(plain)
		for _, ws := range []int{1 << 20, c, 4096, 7} {
			if size > 3*c && ws == 7 {
				continue // slow and adds nothing over 4096
			}
			sealed := seal(t, n, plain, ws)
			chunks := max(1, (size+c-1)/c)
			if want := 25 + size + 16*chunks; len(sealed) != want {
				t.Fatalf("size %d: sealed %d bytes, want %d (header + data + one tag per chunk)", size, len(sealed), want)
			}
			got, err := unseal(n, sealed)
			if err != nil {
				t.Fatalf("size %d write %d: %v", size, ws, err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("size %d write %d: round trip changed the bytes", size, ws)
			}
		}
	}
}

func TestSealUsesFreshNonces(t *testing.T) {
	n := &objectstore.Named{Name: "vault", Encryption: testKey(t, 1)}
	a, b := seal(t, n, []byte("same bytes"), 100), seal(t, n, []byte("same bytes"), 100)
	if bytes.Equal(a, b) {
		t.Fatal("two encryptions of the same bytes are identical: the nonce is not random")
	}
	if bytes.Contains(a, []byte("same bytes")) {
		t.Fatal("plaintext visible in the sealed stream")
	}
}

func TestUnsealDetectsDamage(t *testing.T) {
	n := &objectstore.Named{Name: "vault", Encryption: testKey(t, 1)}
	const c = objectstore.SealChunkSize
	plain := make([]byte, 3*c+100)
	_, _ = rand.Read(plain)
	sealed := seal(t, n, plain, 1<<20)
	chunk := c + 16
	swap := append([]byte(nil), sealed...)
	copy(swap[25:], sealed[25+chunk:25+2*chunk])
	copy(swap[25+chunk:], sealed[25:25+chunk])
	flip := func(i int) []byte { b := append([]byte(nil), sealed...); b[i] ^= 1; return b }
	cases := map[string][]byte{
		"cut at a chunk boundary": sealed[:25+2*chunk],
		"cut mid chunk":           sealed[:25+chunk+100],
		"cut after the header":    sealed[:25],
		"cut inside the header":   sealed[:20],
		"last byte dropped":       sealed[:len(sealed)-1],
		"byte appended":           append(append([]byte(nil), sealed...), 0),
		"ciphertext flipped":      flip(25 + chunk + 7),
		"tag flipped":             flip(len(sealed) - 1),
		"nonce flipped":           flip(20),
		"chunks reordered":        swap,
	}
	for name, damaged := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := unseal(n, damaged)
			if !errors.Is(err, objectstore.ErrDecrypt) {
				t.Fatalf("got %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestUnsealNamesTheStoreAndTheKeys(t *testing.T) {
	writer := &objectstore.Named{Name: "vault", Encryption: testKey(t, 1)}
	sealed := seal(t, writer, []byte("wal bytes"), 100)
	for name, reader := range map[string]*objectstore.Named{
		"wrong key": {Name: "vault", Encryption: testKey(t, 2)},
		"no key":    {Name: "vault"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := unseal(reader, sealed)
			if !errors.Is(err, objectstore.ErrDecrypt) {
				t.Fatalf("got %v, want ErrDecrypt", err)
			}
			for _, want := range []string{`store "vault"`, writer.Encryption.ID(), "srv/wals/x"} {
				if !bytes.Contains([]byte(err.Error()), []byte(want)) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestUnsealPassesPlaintextThrough(t *testing.T) {
	// Objects written before encryption was turned on (or by barman) stay readable.
	n := &objectstore.Named{Name: "vault", Encryption: testKey(t, 1)}
	for _, plain := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0x1f, 0x8b}, 40000)} {
		got, err := unseal(n, plain)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("plaintext of %d bytes: got %d bytes, %v", len(plain), len(got), err)
		}
	}
}
