package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// BinDirEnv names the directory holding the binaries `make tools-k8s` builds, for tests that
// run outside the repository; by default it is bin/ beside the repository's go.work.
const BinDirEnv = "PLINTH_KUBE_BIN_DIR"

// buildHint is what to do when a binary is missing.
const buildHint = "run `make tools-k8s` in the repository root"

// RepoRoot returns the directory holding go.work, found by walking up from the working
// directory (a test's is its package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("kubetest: working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: no go.work in the working directory or above it: run the tests inside the Plinth repository")
		}
		dir = parent
	}
}

// binDir is $PLINTH_KUBE_BIN_DIR, or the repository's bin/.
func binDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w (or set %s)", err, BinDirEnv)
	}
	return filepath.Join(root, "bin"), nil
}

// Binary returns the path of a binary that `make tools-k8s` builds, e.g.
// "kube-apiserver-v1.33.13" or "kwok". When it is missing the test is skipped, or fails under
// PLINTH_TEST_STRICT=1, saying how to build it.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := binary(name)
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	return path
}

func binary(name string) (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	info, err := os.Stat(path)
	if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("kubetest: %s is not built (no executable %s): %s", name, path, buildHint)
	}
	return path, nil
}
