package stores_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// The stores file names keys by reference (env, file) and previous keys for rotation; a store
// says whether it encrypts without showing the key. How keys are read and that they never
// show in formatting is libs/storage/encryption's test; here, that the YAML reaches it.
func TestEncryptionKeysLoadByReferenceAndNeverShow(t *testing.T) {
	dir := t.TempDir()
	raw := []byte("0123456789abcdef0123456789ABCDEF") // 32 bytes
	b64 := base64.StdEncoding.EncodeToString(raw)
	keyFile := filepath.Join(dir, "raw.key")
	if err := os.WriteFile(keyFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
stores:
  env:
    posix: {path: %[1]s/env}
    encryption: {key: {env: TEST_ENC_KEY}}
  file:
    posix: {path: %[1]s/file}
    encryption: {key: {file: %[2]s}}
  plain:
    posix: {path: %[1]s/plain}
  rotated:
    posix: {path: %[1]s/rotated}
    encryption: {key: {file: %[2]s}, previousKeys: [{env: TEST_ENC_KEY}]}
`, dir, keyFile)
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
		log.Info("store", "store", n)
		if n.Encryption != nil {
			ids[n.Encryption.ID()] = true
		}
	}
	if len(ids) != 1 {
		t.Fatalf("the same key by env and by file gave fingerprints %v", ids)
	}
	if rotated, _ := reg.Get("rotated"); len(rotated.Keys()) != 2 || rotated.Keys()[1].ID() != rotated.Keys()[0].ID() {
		t.Fatalf("the rotated store reads with %v", rotated.Keys()) // the same material twice here
	}
	if strings.Contains(out.String(), b64) || strings.Contains(out.String(), string(raw)) {
		t.Fatalf("key material in a store's description: %s", out.String())
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
