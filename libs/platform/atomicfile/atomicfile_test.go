package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWritePrivateReplacesWithOwnerOnlyMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("content %q mode %v, want new 0600", got, fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("left %d files, want only the written one", len(entries))
	}
	if err := WritePrivate(filepath.Join(t.TempDir(), "missing", "x"), nil); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}
