// Package lvmtest gives a test its own volume group on loop devices over sparse files, in
// metadata-only mode when the kernel has no device-mapper, removed when the test ends
// (passed or failed). Names are unique, so tests run in parallel with each other and with
// other test binaries on the machine. Without root, lvm2 or loop devices the test is skipped
// loudly, or fails under PLINTH_TEST_STRICT=1.
package lvmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/loopvg"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// VG is one test's volume group.
type VG struct {
	// Name is the volume group's name.
	Name string
	// Devices are its loop devices, one per physical volume.
	Devices []string
	// MetadataOnly says lvm runs without activation (no device-mapper here).
	MetadataOnly bool
	// Runner runs lvm like the agent does.
	Runner *lvm.Runner

	dir string
}

// Options shape a test VG.
type Options struct {
	// Size of each physical volume in bytes; default 8 GiB (sparse: only written bytes use disk).
	Size int64
	// PVs is the number of physical volumes; default 1.
	PVs int
}

var reapOnce sync.Once

// New creates a volume group for t and removes it in t.Cleanup.
func New(t testing.TB, o Options) *VG {
	t.Helper()
	Require(t)
	reapOnce.Do(func() { reapStale(t) })
	if o.Size == 0 {
		o.Size = 8 << 30
	}
	if o.PVs == 0 {
		o.PVs = 1
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("plinth-lvmtest-%d-", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	v := &VG{Name: "plinthtest_" + randomHex(6), MetadataOnly: !lvm.HasDeviceMapper(), dir: dir}
	v.Runner = lvm.New(lvm.Options{MetadataOnly: v.MetadataOnly, Env: os.Environ()})
	// Registered before anything is created, so a failure half way still cleans up.
	t.Cleanup(func() { v.remove(t) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := loopvg.Ensure(ctx, v.options(0, o.Size))
	if err != nil {
		t.Fatalf("create test volume group: %v", err)
	}
	v.Devices = append(v.Devices, first)
	for i := 1; i < o.PVs; i++ {
		file := filepath.Join(dir, fmt.Sprintf("pv%d.img", i))
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(file, o.Size); err != nil {
			t.Fatal(err)
		}
		dev := v.cmd(t, "losetup", "--find", "--show", file)
		v.Devices = append(v.Devices, dev)
		v.Lvm(t, "vgextend", "-y", v.Name, dev)
	}
	return v
}

// Require skips (or, strict, fails) t unless volume groups can be made here.
func Require(t testing.TB) {
	t.Helper()
	switch {
	case os.Geteuid() != 0:
		testenv.SkipOrFail(t, "lvm tests need root (loop devices and lvm2)")
	case !onPath("lvm"):
		testenv.SkipOrFail(t, "lvm tests need lvm2 (apt-get install lvm2)")
	case !onPath("losetup"):
		testenv.SkipOrFail(t, "lvm tests need losetup (util-linux)")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.SkipOrFail(t, "lvm tests need loop devices (/dev/loop-control): "+err.Error())
	}
}

func onPath(name string) bool { _, err := exec.LookPath(name); return err == nil }

func (v *VG) options(i int, size int64) loopvg.Options {
	return loopvg.Options{File: filepath.Join(v.dir, fmt.Sprintf("pv%d.img", i)), VG: v.Name, Size: size, MetadataOnly: v.MetadataOnly}
}

// remove deletes the VG, detaches every loop device of the test and deletes its files.
func (v *VG) remove(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := removeDir(ctx, v.dir, v.Name, v.MetadataOnly); err != nil {
		t.Errorf("remove test volume group %s: %v", v.Name, err)
	}
}

// removeDir removes a test VG and every loop device backed by a file in dir.
func removeDir(ctx context.Context, dir, vg string, metadataOnly bool) error {
	devs, err := loopvg.List(ctx, nil)
	if err != nil {
		return err
	}
	args := []string{"vgremove", "-ff", "-y", vg}
	if metadataOnly {
		args = append(args, "--config", lvm.MetadataOnlyConfig)
	}
	var errs []string
	if vg != "" {
		if out, err := exec.CommandContext(ctx, "lvm", args...).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("not found")) {
			errs = append(errs, fmt.Sprintf("vgremove: %v: %s", err, out))
		}
	}
	for _, d := range devs {
		if strings.HasPrefix(d.BackFile, dir+"/") {
			pvArgs := []string{"pvremove", "-ff", "-y", d.Name}
			if metadataOnly {
				pvArgs = append(pvArgs, "--config", lvm.MetadataOnlyConfig)
			}
			_ = exec.CommandContext(ctx, "lvm", pvArgs...).Run() // a PV may never have been made
			if out, err := exec.CommandContext(ctx, "losetup", "-d", d.Name).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("losetup -d %s: %v: %s", d.Name, err, out))
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

var staleRE = regexp.MustCompile(`^(.*/plinth-lvmtest-(\d+)-[^/]+)/pv\d+\.img`)

// reapStale removes the VGs of test binaries that died before their cleanups ran (a
// -timeout panic, kill -9): their loop devices stay attached and their VGs stay visible.
func reapStale(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	devs, err := loopvg.List(ctx, nil)
	if err != nil {
		return
	}
	done := map[string]bool{}
	for _, d := range devs {
		m := staleRE.FindStringSubmatch(d.BackFile)
		if m == nil || done[m[1]] {
			continue
		}
		pid, _ := strconv.Atoi(m[2])
		if pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		done[m[1]] = true
		vg, _ := exec.CommandContext(ctx, "lvm", "pvs", "--noheadings", "-o", "vg_name", d.Name, "--config", lvm.MetadataOnlyConfig).Output()
		if err := removeDir(ctx, m[1], strings.TrimSpace(string(vg)), !lvm.HasDeviceMapper()); err != nil {
			t.Logf("could not remove a stale test volume group on %s: %v", d.Name, err)
		}
	}
}

// Lvm runs an lvm subcommand on the test VG's terms (metadata-only when needed) and fails t
// on error; it returns standard output.
func (v *VG) Lvm(t testing.TB, args ...string) string {
	t.Helper()
	if v.MetadataOnly {
		args = append(args, "--config", lvm.MetadataOnlyConfig)
	}
	return v.cmd(t, "lvm", args...)
}

func (v *VG) cmd(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
