package stores_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/archive/stores"
)

func TestEncryptionKeysLoadByReferenceAndNeverShow(t *testing.T) {
	dir := t.TempDir()
	raw := []byte("0123456789abcdef0123456789ABCDEF") // 32 bytes
	b64 := base64.StdEncoding.EncodeToString(raw)
	rawFile, b64File := filepath.Join(dir, "raw.key"), filepath.Join(dir, "b64.key")
	if err := os.WriteFile(rawFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b64File, []byte(b64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
stores:
  env:
    posix: {path: %[1]s/env}
    encryption: {key: {env: TEST_ENC_KEY}}
  raw:
    posix: {path: %[1]s/raw}
    encryption: {key: {file: %[2]s}}
  b64:
    posix: {path: %[1]s/b64}
    encryption: {key: {file: %[3]s}}
  plain:
    posix: {path: %[1]s/plain}
  rotated:
    posix: {path: %[1]s/rotated}
    encryption: {key: {file: %[2]s}, previousKeys: [{env: TEST_ENC_KEY}]}
`, dir, rawFile, b64File)
	f, err := stores.ParseFile([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := stores.Open(f, []string{"TEST_ENC_KEY=" + b64})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	ids := map[string]bool{}
	for _, name := range reg.Names() {
		n, _ := reg.Get(name)
		log.Info("store", "store", n, "key", n.Encryption)
		fmt.Fprintf(&out, "%v %+v %#v %s\n", n.Encryption, n.Encryption, n.Encryption, n.Encryption)
		if n.Encryption != nil {
			ids[n.Encryption.ID()] = true
		}
	}
	if len(ids) != 1 {
		t.Fatalf("the same key in three forms gave fingerprints %v", ids)
	}
	if rotated, _ := reg.Get("rotated"); len(rotated.Keys()) != 2 || rotated.Keys()[1].ID() != rotated.Keys()[0].ID() {
		t.Fatalf("the rotated store reads with %v", rotated.Keys()) // the same material twice here
	}
	for _, secret := range []string{string(raw), b64, hex.EncodeToString(raw), fmt.Sprint(raw)} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("key material in logs or formatting: %s", out.String())
		}
	}
	if !strings.Contains(out.String(), `"encryption":"off"`) || !strings.Contains(out.String(), "aes-256-gcm key ") {
		t.Fatalf("descriptions do not say whether stores encrypt: %s", out.String())
	}

	// A bad key is refused at start, naming the store and the reference, not the value.
	short := base64.StdEncoding.EncodeToString([]byte("short-key-material"))
	_, err = stores.Open(f, []string{"TEST_ENC_KEY=" + short})
	if err == nil || !strings.Contains(err.Error(), "stores.env: encryption.key") || strings.Contains(err.Error(), short) ||
		strings.Contains(err.Error(), "short-key-material") {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := stores.ParseFile([]byte("stores:\n  a:\n    posix: {path: /x}\n    encryption: {}")); err == nil ||
		!strings.Contains(err.Error(), "encryption.key is required") {
		t.Fatalf("missing key reference: %v", err)
	}
}
