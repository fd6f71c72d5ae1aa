package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// binaryDirPrefix names the directory of the binaries one test binary built:
// <prefix><pid>-<random>.
const binaryDirPrefix = "plinth-testbin-"

var binaries struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*builtBinary
}

type builtBinary struct {
	once sync.Once
	path string // in a directory of its own: two commands may share a base name
	err  error
}

// Binary builds the Go command pkg — an import path, or a directory relative to the test's
// package ("../../cmd/auth") — with the workspace's go, once per test binary, and returns the
// file's path. Tests that run a service as a process (to kill it, or to talk to it as a
// client would) share the build. The files are readable by every user (PostgreSQL runs one as
// its archive_command) and live in $TMPDIR/plinth-testbin-<pid>-*: Main removes the
// directory when the tests end, and the first Binary call of a later test binary removes
// those of test binaries that died first.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	b, err := binaryBuild(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b.once.Do(func() {
		if b.err = os.MkdirAll(filepath.Dir(b.path), 0o755); b.err != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// binaryBuild returns pkg's build, creating this test binary's directory on first use.
func binaryBuild(pkg string) (*builtBinary, error) {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir == "" {
		reapStale(binaryDirPrefix, nil)
		dir, err := processDir(binaryDirPrefix)
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			return nil, fmt.Errorf("directory for test binaries: %w", err)
		}
		binaries.dir = dir
		binaries.builds = map[string]*builtBinary{}
	}
	b := binaries.builds[pkg]
	if b == nil {
		dir := filepath.Join(binaries.dir, strconv.Itoa(len(binaries.builds)))
		b = &builtBinary{path: filepath.Join(dir, path.Base(filepath.ToSlash(pkg)))}
		binaries.builds[pkg] = b
	}
	return b, nil
}

// removeBinaries removes this test binary's built binaries (Main, after the tests).
func removeBinaries() {
	binaries.mu.Lock()
	defer binaries.mu.Unlock()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
}
