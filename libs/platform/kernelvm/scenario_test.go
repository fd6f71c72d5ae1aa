package kernelvm_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kernelvm"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestDeviceMapperScenario is what lvmd-agent needs of a kernel, done for real: a loop
// device as a PV in a VG; a thick LV activated, formatted ext4, mounted, written and read
// back, then extended with its file system online; a thin pool and a thin LV with XFS; a
// thin snapshot activated with -K and mounted read-only, which keeps the data of the moment
// it was taken; and everything removed, leaving no device-mapper device behind. On a host
// without device-mapper it runs in a guest (RunTestInGuest on this package's own test).
func TestDeviceMapperScenario(t *testing.T) {
	if kernelvm.RunTestInGuest(t, kernelvm.Options{}) {
		return
	}
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "the device-mapper scenario needs root")
	}
	s := &scenario{t: t, start: time.Now()}
	dir := t.TempDir()
	img := filepath.Join(dir, "pv.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 1<<30); err != nil { // sparse: only what is written takes memory
		t.Fatal(err)
	}
	loop := s.run("losetup", "-f", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", loop).Run() })
	vg := "kvmtest" + randomHex(t) // unique: on a host with device-mapper this runs there
	t.Cleanup(func() { _ = exec.Command("vgremove", "-f", "-y", vg).Run() })
	s.run("pvcreate", "-y", loop)
	s.run("vgcreate", "-y", vg, loop)

	// A thick LV, active: ext4 on it, mounted, written, read back after a remount.
	s.run("lvcreate", "-y", "-W", "y", "-n", "thick", "-L", "64M", vg)
	thick := "/dev/" + vg + "/thick"
	s.run("mkfs.ext4", "-q", thick)
	thickMnt := s.mount(thick, filepath.Join(dir, "thick"), "")
	data := bytes.Repeat([]byte("plinth "), 1<<16)
	s.write(filepath.Join(thickMnt, "data"), data)
	s.umount(thickMnt)
	s.mount(thick, thickMnt, "")
	s.read(filepath.Join(thickMnt, "data"), data)

	// Extended online, its file system with it.
	s.run("lvextend", "-r", "-L", "128M", vg+"/thick")
	if size := s.run("blockdev", "--getsize64", thick); size != strconv.Itoa(128<<20) {
		t.Errorf("thick LV is %s bytes after lvextend, want %d", size, 128<<20)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(thickMnt, &st); err != nil || st.Blocks*uint64(st.Bsize) < 100<<20 {
		t.Errorf("ext4 after lvextend -r: %d bytes (%v), want over 100 MiB", st.Blocks*uint64(st.Bsize), err)
	}
	s.read(filepath.Join(thickMnt, "data"), data)

	// A thin pool, a thin LV with XFS (at least 300 MB), and a thin snapshot of it.
	s.run("lvcreate", "-y", "--type", "thin-pool", "-n", "pool", "-L", "256M", vg)
	s.run("lvcreate", "-y", "-W", "y", "-n", "thin", "-V", "512M", "--thinpool", vg+"/pool")
	thin := "/dev/" + vg + "/thin"
	s.run("mkfs.xfs", "-q", thin)
	thinMnt := s.mount(thin, filepath.Join(dir, "thin"), "")
	s.write(filepath.Join(thinMnt, "data"), data)
	s.run("lvcreate", "-y", "-s", "-n", "snap", vg+"/thin") // suspending the origin freezes XFS
	s.write(filepath.Join(thinMnt, "data"), []byte("changed after the snapshot"))
	s.run("lvchange", "-ay", "-K", vg+"/snap") // thin snapshots skip activation unless -K
	snapMnt := s.mount("/dev/"+vg+"/snap", filepath.Join(dir, "snap"), "ro,nouuid,norecovery")
	s.read(filepath.Join(snapMnt, "data"), data)
	if attrs := s.run("lvs", "--noheadings", "-o", "lv_name,lv_attr", vg); !strings.Contains(attrs, "snap") ||
		!strings.Contains(attrs, "twi-ao") || !strings.Contains(attrs, "Vwi-aot") {
		t.Errorf("lvs attributes:\n%s", attrs)
	}

	// Everything removed: no LV, VG, PV or device-mapper device is left.
	for _, m := range []string{snapMnt, thinMnt, thickMnt} {
		s.umount(m)
	}
	s.run("lvremove", "-y", vg+"/snap", vg+"/thin", vg+"/pool", vg+"/thick")
	s.run("vgremove", "-y", vg)
	s.run("pvremove", "-y", loop)
	if left := s.run("dmsetup", "ls"); strings.Contains(left, vg) {
		t.Errorf("device-mapper devices left:\n%s", left)
	}
	t.Logf("scenario done in %v", time.Since(s.start).Round(100*time.Millisecond))
}

// scenario runs the steps of TestDeviceMapperScenario, each logged with its time.
type scenario struct {
	t     *testing.T
	start time.Time
}

// run runs a command and returns its trimmed standard output; a failure ends the test.
func (s *scenario) run(name string, args ...string) string {
	s.t.Helper()
	began := time.Now()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LVM_SUPPRESS_FD_WARNINGS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	s.t.Logf("%6.1fs %s %s (%v)", time.Since(s.start).Seconds(), name, strings.Join(args, " "), time.Since(began).Round(10*time.Millisecond))
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func (s *scenario) mount(dev, dir, opts string) string {
	s.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	args := []string{dev, dir}
	if opts != "" {
		args = append([]string{"-o", opts}, args...)
	}
	s.run("mount", args...)
	s.t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

func (s *scenario) umount(dir string) {
	s.t.Helper()
	s.run("umount", dir)
}

func (s *scenario) write(path string, data []byte) {
	s.t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		s.t.Fatal(err)
	}
	f, err := os.Open(path)
	if err == nil {
		err = f.Sync()
		_ = f.Close()
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) read(path string, want []byte) {
	s.t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		s.t.Fatalf("%s holds %d bytes (%.20q…), want the %d written", path, len(got), got, len(want))
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
