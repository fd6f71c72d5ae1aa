package kernelvm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// The initramfs is read by the kernel; busybox's cpio reads the same newc format, so it
// checks the writer here: names, types, modes and contents.
func TestCPIOIsReadByBusybox(t *testing.T) {
	bb, err := progBusybox.look()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	var buf bytes.Buffer
	w := newCPIO(&buf)
	w.dir("bin", 0o755)
	w.file("bin/odd", 0o755, []byte("abc")) // lengths not multiple of four pad both name and data
	w.file("init", 0o700, []byte("#!/bin/sh\n"))
	w.charDev("console", 0o600, 5, 1)
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	list := exec.Command(bb, "cpio", "-t", "-v")
	list.Stdin = bytes.NewReader(buf.Bytes())
	out, err := list.Output() // "N blocks" goes to standard error
	if err != nil {
		t.Fatalf("busybox cpio -t: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		got = append(got, f[0]+" "+f[len(f)-1])
	}
	want := []string{"drwxr-xr-x bin", "-rwxr-xr-x bin/odd", "-rwx------ init", "crw------- console"}
	if !slices.Equal(got, want) {
		t.Fatalf("busybox cpio -t lists\n%s\nwant %q", out, want)
	}
	dir := t.TempDir()
	extract := exec.Command(bb, "cpio", "-i", "-d", "bin/odd", "init")
	extract.Dir, extract.Stdin = dir, bytes.NewReader(buf.Bytes())
	if out, err := extract.CombinedOutput(); err != nil {
		t.Fatalf("busybox cpio -i: %v\n%s", err, out)
	}
	for name, want := range map[string]string{"bin/odd": "abc", "init": "#!/bin/sh\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
	bad := newCPIO(&buf)
	bad.file("/abs", 0o644, nil)
	if bad.close() == nil {
		t.Error("an absolute name was written")
	}
}

func TestParseDepends(t *testing.T) {
	out := "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n"
	if got, err := parseDepends([]byte(out)); err != nil || got != "linux-image-6.1.0-57-amd64" {
		t.Fatalf("parseDepends = %q, %v", got, err)
	}
	if _, err := parseDepends([]byte("linux-image-amd64\n  Depends: <linux-image-x>\n")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no package: err = %v, want ErrUnavailable", err)
	}
}

func TestParseShowDepends(t *testing.T) {
	out := "insmod /m/virtio.ko \ninsmod /m/virtio_pci.ko \nbuiltin crc32c\ninsmod /m/virtio.ko \ninsmod /m/9p.ko \n"
	got, err := parseShowDepends([]byte(out))
	if want := []string{"/m/virtio.ko", "/m/virtio_pci.ko", "/m/9p.ko"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("parseShowDepends = %q, %v; want %q", got, err, want)
	}
	if _, err := parseShowDepends([]byte("insmod /m/x.ko param=1\n")); err == nil {
		t.Error("a module parameter was accepted: stage 1 would load the module without it")
	}
}

// A bzImage header (boot protocol 2.08+) locates the compressed payload; a truncated or
// foreign file is refused, and a payload that is not ELF with the PVH note is not used.
func TestBzPayload(t *testing.T) {
	bz := make([]byte, 6*512+64)
	copy(bz[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(bz[0x206:], 0x20f)
	bz[0x1f1] = 4 // setup sectors: the protected-mode code starts at 5*512
	binary.LittleEndian.PutUint32(bz[0x248:], 100)
	binary.LittleEndian.PutUint32(bz[0x24c:], 6)
	copy(bz[5*512+100:], "\x1f\x8bdata")
	got, err := bzPayload(bz)
	if err != nil || string(got) != "\x1f\x8bdata" {
		t.Fatalf("bzPayload = %q, %v", got, err)
	}
	binary.LittleEndian.PutUint32(bz[0x24c:], 1<<20)
	if _, err := bzPayload(bz); err == nil {
		t.Error("a payload beyond the file was accepted")
	}
	if _, err := bzPayload([]byte("not a kernel")); err == nil {
		t.Error("a foreign file was accepted")
	}
	if err := checkPVH([]byte("\x7fELF garbage")); err == nil {
		t.Error("checkPVH accepted garbage")
	}
}

// What command.sh does is what exec.Cmd would: the directory, exactly the environment
// given (plus the guest's two variables), each argument intact whatever it holds.
func TestCommandScriptQuotes(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `"$HOME" $(id) ;|&<>*?` + "\t\n", `'\''`} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh printf %s = %q, %v; want %q", shellQuote(s), out, err, s)
		}
	}
	script := commandScript(Options{Command: []string{"prog", "a b"}, Env: []string{"A=1"}, Dir: "/x y"})
	want := "cd '/x y' || exit 125\nexec " + guestBusybox + " env -i 'A=1' 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' " +
		"'DM_DISABLE_UDEV=1' '" + GuestEnv + "=1' 'prog' 'a b'\n"
	if script != want {
		t.Errorf("command.sh:\n%s\nwant:\n%s", script, want)
	}
	if s := commandScript(Options{Command: []string{"p"}, Env: []string{"PATH=/bin"}}); strings.Count(s, "PATH=") != 1 || !strings.Contains(s, "cd '/'") {
		t.Errorf("command.sh with a PATH of its own and no Dir:\n%s", s)
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, o := range map[string]Options{
		"no command":     {},
		"empty program":  {Command: []string{""}},
		"= in program":   {Command: []string{"A=B"}},
		"NUL":            {Command: []string{"sh", "a\x00b"}},
		"env not k=v":    {Command: []string{"sh"}, Env: []string{"PATH"}},
		"env empty key":  {Command: []string{"sh"}, Env: []string{"=x"}},
		"port 0":         {Command: []string{"sh"}, ForwardPorts: []int{0}},
		"port repeated":  {Command: []string{"sh"}, ForwardPorts: []int{5432, 5432}},
		"port too large": {Command: []string{"sh"}, ForwardPorts: []int{65536}},
		"memory":         {Command: []string{"sh"}, MemoryMiB: -1},
	} {
		if o.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (Options{Command: []string{"sh"}, Env: []string{"A="}, ForwardPorts: []int{5432, 4222}}).validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func TestTestOutcome(t *testing.T) {
	out := "=== RUN   TestA\n    --- PASS: TestA/sub (0.00s)\n--- FAIL: TestAB (0.00s)\n--- SKIP: TestA (1.20s)\n"
	for name, want := range map[string]string{"TestA": "SKIP", "TestAB": "FAIL", "TestA/sub": "", "TestC": ""} {
		if got := testOutcome(out, name); got != want {
			t.Errorf("testOutcome(%s) = %q, want %q", name, got, want)
		}
	}
}

func TestPassEnv(t *testing.T) {
	got := PassEnv([]string{"PATH=/bin", "PLINTH_TEST_STRICT=1", "TEST_DATABASE_URL=x", "PGPASSFILE=/p",
		"GOFLAGS=-mod=mod", "HOME=/root", "SSH_AUTH_SOCK=/s", "DISPLAY=:0", GuestEnv + "=1", "broken"})
	want := []string{"PATH=/bin", "PLINTH_TEST_STRICT=1", "TEST_DATABASE_URL=x", "PGPASSFILE=/p", "GOFLAGS=-mod=mod", "HOME=/root"}
	if !slices.Equal(got, want) {
		t.Fatalf("PassEnv = %q, want %q", got, want)
	}
}

// Processes preparing at once build once: the others wait for the lock and find the guest
// made. A build that failed or died leaves nothing a later one trips on.
func TestPrepareOnceBuildsOnce(t *testing.T) {
	cache := t.TempDir()
	const release = "6.1.0-0-test"
	if err := os.MkdirAll(filepath.Join(cache, "."+release+".tmp-dead"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	logf := func(string, ...any) {}
	if _, err := prepareOnce(ctx, cache, release, logf, func(string) error { return errors.New("no network") }); err == nil {
		t.Fatal("a failed build gave a guest")
	}
	var builds atomic.Int32
	fakeBuild := func(tmp string) error {
		builds.Add(1)
		time.Sleep(200 * time.Millisecond) // long enough for the others to queue on the lock
		for name, data := range map[string]string{
			"base.cpio": "cpio", "vmlinux": "elf", "tree/lib/modules/" + release + "/modules.dep": "",
		} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, name)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, name), []byte(data), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	guests := make([]*guest, 4)
	errs := make([]error, len(guests))
	for i := range guests {
		wg.Go(func() { guests[i], errs[i] = prepareOnce(ctx, cache, release, logf, fakeBuild) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("prepare %d: %v", i, err)
		}
		if *guests[i] != *guests[0] {
			t.Errorf("prepare %d gave %+v, prepare 0 %+v", i, *guests[i], *guests[0])
		}
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "."+release+".tmp-*")); len(left) != 0 {
		t.Errorf("temporary directories left: %q", left)
	}
	g := guests[0]
	if g.image != filepath.Join(cache, release, "vmlinux") || g.modules != filepath.Join(cache, release, "tree/lib/modules") {
		t.Errorf("guest %+v", *g)
	}
	if got := newestPrepared(cache); got == nil || *got != *g {
		t.Errorf("newestPrepared = %v, want %+v", got, *g)
	}
}

// A lock held elsewhere (another process: each open file has its own flock) keeps the
// next taker waiting until it is released or the context ends.
func TestLockFileWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(t.Context(), path, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var said atomic.Int32
	if _, err := lockFile(ctx, path, func(string, ...any) { said.Add(1) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want the context's end", err)
	}
	if said.Load() != 1 {
		t.Errorf("said it waits %d times, want once", said.Load())
	}
	unlock()
	unlock2, err := lockFile(t.Context(), path, func(string, ...any) {})
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}
