package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBinaryBuildsOnceAndReapsDeadProcessesDirectories(t *testing.T) {
	// A directory of a process that no longer runs (pid 2^22+1 is above Linux's pid_max).
	stale, err := os.MkdirTemp("", binaryDirPrefix+"4194305-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(stale) })

	bin := Binary(t, "./testdata/hello")
	if again := Binary(t, "./testdata/hello"); again != bin {
		t.Fatalf("second Binary = %s, want the first build %s", again, bin)
	}
	out, err := exec.Command(bin).Output()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("%s: %q, %v", bin, out, err)
	}
	if fi, err := os.Stat(filepath.Dir(filepath.Dir(bin))); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("binaries' directory: %v, %v; want readable by every user", fi, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a dead test binary's directory %s was kept (%v)", stale, err)
	}
}
