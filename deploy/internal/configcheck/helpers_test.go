package configcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root: this package is deploy/internal/configcheck.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("%s is not the repository root: %v", root, err)
	}
	return root
}

// readRepoFile reads a file of the repository.
func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate replaces the first old in src with new. It fails the test when old is missing, so a
// negative case can never pass by checking the unchanged file.
func mutate(t *testing.T, src []byte, old, new string) []byte {
	t.Helper()
	if !strings.Contains(string(src), old) {
		t.Fatalf("mutation target %q is not in the file any more: update the test", old)
	}
	return []byte(strings.Replace(string(src), old, new, 1))
}

// wantErr fails unless err mentions want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an error mentioning %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not mention %q:\n%v", want, err)
	}
}
