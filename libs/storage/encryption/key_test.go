package encryption_test

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

	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/secret"
)

func TestKeysLoadByReferenceAndNeverShow(t *testing.T) {
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
	env := map[string]string{"K": b64, "KURL": base64.RawURLEncoding.EncodeToString(raw)}
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	ids := map[string]bool{}
	for _, ref := range []secret.Ref{{Env: "K"}, {Env: "KURL"}, {File: rawFile}, {File: b64File}} {
		k, err := encryption.LoadKey(ref, env)
		if err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
		ids[k.ID()] = true
		log.Info("key", "key", k)
		fmt.Fprintf(&out, "%v %+v %#v %s\n", k, k, k, k)
	}
	if len(ids) != 1 {
		t.Fatalf("the same key in four forms gave fingerprints %v", ids)
	}
	for _, s := range []string{string(raw), b64, hex.EncodeToString(raw), fmt.Sprint(raw)} {
		if strings.Contains(out.String(), s) {
			t.Fatalf("key material in logs or formatting: %s", out.String())
		}
	}
	short := base64.StdEncoding.EncodeToString([]byte("short-key-material"))
	_, err := encryption.LoadKey(secret.Ref{Env: "S"}, map[string]string{"S": short})
	if err == nil || strings.Contains(err.Error(), short) || strings.Contains(err.Error(), "short-key-material") {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := encryption.NewKey(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}
