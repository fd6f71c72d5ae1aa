package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
)

func testKey(t testing.TB, b byte) *encryption.Key {
	t.Helper()
	k, err := encryption.NewKey([]byte(strings.Repeat(string(rune(b)), 32)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func validManifest(t testing.TB, key *encryption.Key) []byte {
	t.Helper()
	sum, dataSum := sha256.Sum256([]byte("volume")), sha256.Sum256([]byte("stored"))
	m := Manifest{Format: Format, Backup: "b", VolumeHandle: "v", SizeBytes: 1 << 30, Source: sourcePhysical,
		Data: "volume.img.zst", DataBytes: 10, DataSHA256: hex.EncodeToString(dataSum[:]), Compression: "zstd"}
	if key != nil {
		m.Encrypted, m.KeyID = true, key.ID()
		var err error
		if m.SealedVolumeSHA256, err = seal(sum[:], key); err != nil {
			t.Fatal(err)
		}
	} else {
		m.VolumeSHA256 = hex.EncodeToString(sum[:])
	}
	data, _ := json.Marshal(m)
	return data
}

func TestManifestChecksumIsSealedWithTheKey(t *testing.T) {
	key := testKey(t, 'k')
	m, err := ParseManifest(validManifest(t, key))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte("volume"))
	if got, err := m.volumeChecksum(key); err != nil || got != hex.EncodeToString(want[:]) {
		t.Fatalf("unseal %q %v", got, err)
	}
	if _, err := m.volumeChecksum(testKey(t, 'x')); err == nil {
		t.Fatal("another key unsealed the checksum")
	}
	if err := checkKey(m, testKey(t, 'x')); err == nil || !strings.Contains(err.Error(), "encryption_key") {
		t.Fatalf("checkKey with the wrong key: %v", err)
	}
	if err := checkKey(m, nil); err != ErrKeyRequired {
		t.Fatalf("checkKey without key: %v", err)
	}
	if strings.Contains(string(validManifest(t, key)), hex.EncodeToString(want[:])) {
		t.Fatal("an encrypted backup's manifest shows the volume's checksum")
	}
	plain, err := ParseManifest(validManifest(t, nil))
	if err != nil || checkKey(plain, nil) != nil {
		t.Fatalf("plain manifest: %v", err)
	}
}

func TestParseManifestRefuses(t *testing.T) {
	good := string(validManifest(t, nil))
	for _, bad := range []string{
		"", "{", good + "{}",
		strings.Replace(good, Format, "plinth-lvmd-backup/9", 1),
		strings.Replace(good, `"volume.img.zst"`, `"../x"`, 1),
		strings.Replace(good, `"volume.img.zst"`, `"manifest.json"`, 1),
		strings.Replace(good, `"zstd"`, `"brotli"`, 1),
		strings.Replace(good, `"size_bytes":1073741824`, `"size_bytes":0`, 1),
		strings.Replace(good, `"data_bytes":10`, `"data_bytes":-1`, 1),
		strings.Replace(good, `"encrypted":false`, `"encrypted":true`, 1),
		strings.Repeat(" ", maxManifest+1),
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("accepted %.80q", bad)
		}
	}
}

// FuzzManifest feeds arbitrary bytes (a manifest is read from an object store anyone with
// the bucket's credentials can write) to the parser: no input may panic, and an accepted
// manifest names a data object under the backup and a compression the agent reads.
func FuzzManifest(f *testing.F) {
	f.Add(validManifest(f, nil))
	f.Add(validManifest(f, testKey(f, 'k')))
	f.Add([]byte(`{"format":"plinth-lvmd-backup/1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if _, ok := compressionOf(m.Compression); !ok || m.Data == "" || m.Data == manifestKey || strings.HasPrefix(m.Data, "/") {
			t.Fatalf("accepted %+v", m)
		}
		_, _ = m.volumeChecksum(testKey(t, 'k'))
	})
}

// TestEveryWritableCompressionRestores: a manifest naming any compression the agent may be
// configured to write is readable, so no backup is written that restore then refuses.
func TestEveryWritableCompressionRestores(t *testing.T) {
	for _, k := range compression.Kinds() {
		if !k.Writable() {
			continue
		}
		if got, ok := compressionOf(string(k)); !ok || got != k {
			t.Errorf("compression %q written but not read back: %q %v", k, got, ok)
		}
	}
	if _, ok := compressionOf("brotli"); ok {
		t.Error("an unknown compression must be refused")
	}
}
