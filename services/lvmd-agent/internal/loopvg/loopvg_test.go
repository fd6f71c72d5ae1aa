package loopvg

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestAttachedFindsTheFileByInode: a loop device attached through another path to the same
// file (here a symlink; in compose, the same volume mounted in an earlier container, whose
// path the kernel keeps) is the file's device. Matching by path attached a second loop device
// to the same PV, and a second compose project's agent took the first project's device.
func TestAttachedFindsTheFileByInode(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "loop devices need root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		testenv.SkipOrFail(t, "no losetup (util-linux mount)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "real", "pv0.img")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := createSparse(file, 64<<20); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	if err := os.Symlink(filepath.Join(dir, "real"), other); err != nil {
		t.Fatal(err)
	}
	if dev, err := Attached(ctx, file, nil); err != nil || dev != "" {
		t.Fatalf("before attaching: %q, %v", dev, err)
	}
	out, err := exec.Command("losetup", "--find", "--show", file).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}
	dev := string(out[:len(out)-1])
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	for _, path := range []string{file, filepath.Join(other, "pv0.img")} {
		got, err := Attached(ctx, path, nil)
		if err != nil || got != dev {
			t.Errorf("Attached(%s) = %q, %v; want %s", path, got, err, dev)
		}
	}
	// Another file is not that device.
	second := filepath.Join(dir, "real", "pv1.img")
	if err := createSparse(second, 64<<20); err != nil {
		t.Fatal(err)
	}
	if got, err := Attached(ctx, second, nil); err != nil || got != "" {
		t.Errorf("Attached(another file) = %q, %v; want none", got, err)
	}
	if got, err := Attached(ctx, filepath.Join(dir, "missing.img"), nil); err != nil || got != "" {
		t.Errorf("Attached(a missing file) = %q, %v; want none", got, err)
	}
}
