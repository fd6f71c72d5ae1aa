package stores_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

func TestParseFileRejectsMistakes(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"no stores", `defaultStore: x`, "at least one store"},
		{"unknown field", "stores:\n  a:\n    posix: {path: /x, pathstyle: true}", "pathstyle"},
		{"both kinds", "stores:\n  a:\n    posix: {path: /x}\n    s3: {bucket: b}", "exactly one of s3, azure, gcs and posix"},
		{"neither kind", "stores:\n  a: {prefix: p}", "exactly one of s3, azure, gcs and posix"},
		{"relative path", "stores:\n  a:\n    posix: {path: rel}", "absolute"},
		{"bad name", "stores:\n  Bad_Name:\n    posix: {path: /x}", `stores."Bad_Name": the name`},
		{"missing bucket", "stores:\n  a:\n    s3: {accessKeyId: {env: A}, secretAccessKey: {env: B}}", "s3.bucket is required"},
		{"missing creds", "stores:\n  a:\n    s3: {bucket: b}", "s3.accessKeyId and s3.secretAccessKey are required"},
		{"small parts", "stores:\n  a:\n    s3: {bucket: b, partSizeMiB: 1, accessKeyId: {env: A}, secretAccessKey: {env: B}}", "partSizeMiB"},
		{"bad compression", "stores:\n  a:\n    posix: {path: /x}\n    wal: {compression: lzo}", `"lzo"`},
		{"bad parallel", "stores:\n  a:\n    posix: {path: /x}\n    wal: {maxParallel: 100}", "maxParallel"},
		{"bad default", "defaultStore: b\nstores:\n  a:\n    posix: {path: /x}", `defaultStore: "b"`},
		{"bad prefix", "stores:\n  a:\n    prefix: a//b\n    posix: {path: /x}", "prefix"},
		{"empty previous key", "stores:\n  a:\n    posix: {path: /x}\n    encryption: {key: {env: K}, previousKeys: [{}]}", "encryption.previousKeys[0] is empty"},
	}
	for _, c := range cases {
		_, err := stores.ParseFile([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestParseFileAcceptsJSONAndYAML(t *testing.T) {
	json := `{"defaultStore": "local", "stores": {"local": {"posix": {"path": "/var/lib/x"}, "wal": {"compression": "zstd", "maxParallel": 4}}}}`
	f, err := stores.ParseFile([]byte(json))
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Stores["local"]; s.POSIX.Path != "/var/lib/x" || s.WAL.Compression != "zstd" || s.WAL.MaxParallel != 4 {
		t.Fatalf("parsed %+v", s)
	}
}

// TestOpenResolvesSecretsWithoutRevealingThem: credentials come from the environment or
// files; neither errors nor the store's log description carry a secret value.
func TestOpenResolvesSecretsWithoutRevealingThem(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("file-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
stores:
  main:
    s3:
      endpoint: http://127.0.0.1:1
      bucket: b
      accessKeyId: {env: TEST_KEY_ID}
      secretAccessKey: {file: %s}
  local:
    posix: {path: %s}
defaultStore: main
`, secretFile, filepath.Join(dir, "posix"))
	f, err := stores.ParseFile([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := stores.Open(f, []string{"TEST_KEY_ID=env-key-id-value"})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	for _, name := range reg.Names() {
		n, err := reg.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("store", "store", n)
	}
	if def, err := reg.Get(""); err != nil || def.Name != "main" || def.WAL.Compression != "gzip" || def.WAL.MaxParallel != 1 {
		t.Fatalf("default store %+v %v", def, err)
	}
	for _, secret := range []string{"env-key-id-value", "file-secret-value"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("secret in the store description: %s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"bucket":"b"`) {
		t.Fatalf("description lacks the bucket: %s", logs.String())
	}
	if _, err := reg.Get("nope"); !errors.Is(err, stores.ErrUnknownStore) || !strings.Contains(err.Error(), "local, main") {
		t.Fatalf("unknown store: %v", err)
	}

	_, err = stores.Open(f, nil)
	if err == nil || !strings.Contains(err.Error(), "TEST_KEY_ID is not set") {
		t.Fatalf("missing env: %v", err)
	}
	if err := os.WriteFile(secretFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := stores.Open(f, []string{"TEST_KEY_ID=x"}); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty secret file: %v", err)
	}
}
