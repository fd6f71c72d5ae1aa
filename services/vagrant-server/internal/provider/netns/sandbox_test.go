package netns_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
)

// The attacker of issue #36: an operator (or any holder of a Vagrant login token) ups a netns
// machine and runs whatever it likes in it. These tests run the attacker's commands in a real
// machine and check, from the host, that they stay in the sandbox.

// upMachine ups a fresh machine of p and destroys it at the end of the test.
func upMachine(t *testing.T, p *netns.Provider, prefix string) string {
	t.Helper()
	id := prefix + randomHex(t, 4)
	t.Cleanup(func() { _ = p.Destroy(context.Background(), id) })
	if err := p.Up(context.Background(), id); err != nil {
		t.Fatalf("up %s: %v", id, err)
	}
	return id
}

// hostProcess starts `sleep <marker>` in the background in machine id and returns its pid as
// the host sees it, found by its unique argument.
func hostProcess(t *testing.T, p *netns.Provider, id string) int {
	t.Helper()
	marker := "86399." + strconv.Itoa(int(time.Now().UnixNano()%1e6))
	if code, _, errOut := run(t, p, id, nil, "sh", "-c", "sleep "+marker+" >/dev/null 2>&1 </dev/null &"); code != 0 {
		t.Fatalf("start a background process: exit %d: %s", code, errOut)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if string(cmd) == "sleep\x00"+marker+"\x00" {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the machine's process `sleep %s` is not visible on the host", marker)
	return 0
}

// statusField is field (e.g. "Uid") of /proc/<pid>/status as the host reads it.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return ""
}

// capMask is the capability set the machines' processes hold (netns.Capabilities), as a
// /proc/<pid>/status mask.
func capMask() uint64 {
	var m uint64
	for _, c := range netns.Capabilities {
		m |= 1 << capNumbers[c]
	}
	return m
}

// capNumbers are the kernel's numbers of the capabilities a machine may hold.
var capNumbers = map[string]uint{"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4,
	"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_NET_BIND_SERVICE": 10}

// TestSandboxJobIsNotHostRoot: a job's `id` may say root, but the host sees an unprivileged
// uid with a minimal capability set and no way to gain more.
func TestSandboxJobIsNotHostRoot(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "r")
	pid := hostProcess(t, p, id)
	for _, field := range []string{"Uid", "Gid"} {
		if ids := strings.Fields(statusField(t, pid, field)); slices.Contains(ids, "0") {
			t.Errorf("the machine's process runs as host %s 0: %v", field, ids)
		}
	}
	for _, field := range []string{"CapEff", "CapPrm", "CapBnd"} {
		got, err := strconv.ParseUint(statusField(t, pid, field), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got&^capMask() != 0 {
			t.Errorf("host view %s = %016x; the machine may hold only %v (%016x)", field, got, netns.Capabilities, capMask())
		}
	}
	if nnp := statusField(t, pid, "NoNewPrivs"); nnp != "1" {
		t.Errorf("NoNewPrivs = %s: a setuid binary could give a job more than it has", nnp)
	}
	// Capabilities held inside a user namespace do not reach the host's namespaces.
	self, _ := os.Readlink("/proc/self/ns/user")
	theirs, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if self == theirs {
		t.Errorf("the machine's process is in the host's user namespace (%s)", theirs)
	}
}

// TestSandboxHidesHostFiles: what the host keeps (root's home, the suite's .plinth, /tmp) is
// not in the machine, even when the file is world-readable; the machine writes only its own
// root filesystem.
func TestSandboxHidesHostFiles(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "f")
	secret := "plinth-sandbox-secret-" + randomHex(t, 8)
	var files []string
	for _, dir := range []string{"/root", repoPlinthDir(t), t.TempDir()} {
		f := filepath.Join(dir, "sandbox-probe-"+randomHex(t, 4))
		if err := os.WriteFile(f, []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(f) })
		files = append(files, f)
	}
	for _, f := range files {
		code, out, _ := run(t, p, id, nil, "cat", f)
		if code == 0 || strings.Contains(out, secret) {
			t.Errorf("the machine read the host's %s: exit %d, %q", f, code, out)
		}
	}
	code, out, _ := run(t, p, id, nil, "ls", "-a", "/root", "/work")
	if strings.Contains(out, "sandbox-probe") || strings.Contains(out, ".plinth") {
		t.Errorf("the machine lists host files (exit %d):\n%s", code, out)
	}
	// Writes: the host's system directories are read-only; anything else lands in the
	// machine's own root filesystem, never on the host's.
	probe := "plinth-sandbox-write-" + randomHex(t, 4)
	for _, dir := range []string{"/usr", "/etc", "/usr/bin"} {
		if code, _, _ := run(t, p, id, nil, "touch", filepath.Join(dir, probe)); code == 0 {
			t.Errorf("the machine wrote in %s", dir)
		}
	}
	for _, dir := range []string{"/", "/tmp", "/root", "/var/lib"} {
		if code, _, errOut := run(t, p, id, nil, "sh", "-c", `mkdir -p "$1" && touch "$1/$2"`, "sh", dir, probe); code != 0 {
			t.Errorf("the machine cannot write its own %s: %s", dir, errOut)
		}
	}
	for _, dir := range []string{"/usr", "/etc", "/usr/bin", "/", "/tmp", "/root", "/var/lib"} {
		if _, err := os.Stat(filepath.Join(dir, probe)); err == nil {
			_ = os.Remove(filepath.Join(dir, probe))
			t.Errorf("the machine's write reached the host's %s", dir)
		}
	}
}

// repoPlinthDir is the checkout's .plinth (make up's runtime state), made if missing.
func repoPlinthDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = filepath.Dir(dir)
	}
	dir = filepath.Join(dir, ".plinth")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
	}
	return dir
}

// TestSandboxHidesHostProcessesAndSockets: the machine sees only its own processes and
// cannot reach the host's unix sockets (Postgres's, NATS's, lvmd's, cnpgi's live in such
// directories).
func TestSandboxHidesHostProcessesAndSockets(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "s")
	self := strconv.Itoa(os.Getpid())
	if code, _, _ := run(t, p, id, nil, "test", "-e", "/proc/"+self+"/status"); code == 0 {
		t.Errorf("the machine sees the host's process %s (the test) in /proc", self)
	}
	if code, out, _ := run(t, p, id, nil, "sh", "-c", "ls /proc | grep -c '^[0-9]'"); code != 0 || atoi(out) > 10 {
		t.Errorf("the machine sees %s processes (exit %d); want only its own few", strings.TrimSpace(out), code)
	}
	var accepted = make(chan string, 8)
	for _, path := range []string{"/run/plinth-sandbox-" + randomHex(t, 4) + ".sock", "/var/run/postgresql/.s.PGSQL." + strconv.Itoa(50000+os.Getpid()%10000)} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(path, 0o777) // as open as a socket can be: only the mount namespace hides it
		t.Cleanup(func() { l.Close(); _ = os.Remove(path) })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- path
				c.Close()
			}
		}()
		code, out, errOut := run(t, p, id, nil, "curl", "-sS", "--max-time", "3", "--unix-socket", path, "http://x/")
		if code == 0 {
			t.Errorf("the machine reached the host's socket %s: %s %s", path, out, errOut)
		}
	}
	select {
	case path := <-accepted:
		t.Errorf("the host's socket %s accepted a connection from the machine", path)
	case <-time.After(200 * time.Millisecond):
	}
	// Postgres and NATS on the host's loopback: neither the machine's loopback nor the host's
	// bridge address reaches them.
	addr, _, err := p.Address(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	gateway := addr.Masked().Addr().Next().String()
	for _, port := range []string{"5432", "4222"} {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err != nil {
			t.Logf("nothing listens on the host's 127.0.0.1:%s; not probed", port)
			continue
		}
		c.Close()
		for _, host := range []string{"127.0.0.1", gateway} {
			if code, _, _ := run(t, p, id, nil, "curl", "-sS", "--max-time", "3", "telnet://"+host+":"+port); code == 0 || code == 28 {
				t.Errorf("the machine connected to %s:%s (curl exit %d; 7 is refused)", host, port, code)
			}
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(strings.TrimSpace(s)); return n }

// TestSandboxLimits: the machine's processes are in cgroups with the configured CPU, memory
// and process limits (cgroup v1 or v2), and the process limit holds against a fork storm.
func TestSandboxLimits(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "l")
	pid := hostProcess(t, p, id)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pids/pids.max": strconv.Itoa(testPids), "memory/memory.limit_in_bytes": strconv.FormatInt(testMemory, 10),
		"cpu/cpu.cfs_quota_us": "50000"}
	if unified, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "0::"); ok && !strings.Contains(unified, "\n") {
		want = map[string]string{unified + "/pids.max": strconv.Itoa(testPids), unified + "/memory.max": strconv.FormatInt(testMemory, 10),
			unified + "/cpu.max": "50000 100000"}
	} else {
		for file, value := range want {
			controller := strings.Split(file, "/")[0]
			delete(want, file)
			want[filepath.Join(controller, cgroupOf(t, string(b), controller), filepath.Base(file))] = value
		}
	}
	for file, value := range want {
		got, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", file))
		if err != nil || strings.TrimSpace(string(got)) != value {
			t.Errorf("%s = %q (%v), want %s", file, got, err, value)
		}
	}
	code, out, _ := run(t, p, id, nil, "sh", "-c", "n=0; while [ $n -lt 200 ]; do sleep 30 & n=$((n+1)); done 2>/dev/null; ls /proc | grep -c '^[0-9]'")
	if n := atoi(out); n > testPids {
		t.Errorf("a fork storm made %d processes (exit %d), want at most pids.max %d", n, code, testPids)
	}
}

// cgroupOf is the cgroup, in the v1 hierarchy of controller, of a /proc/<pid>/cgroup.
func cgroupOf(t *testing.T, procCgroup, controller string) string {
	t.Helper()
	for _, line := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && strings.Contains(","+f[1]+",", ","+controller+",") {
			return f[2]
		}
	}
	t.Fatalf("no cgroup v1 %s hierarchy: %s", controller, procCgroup)
	return ""
}

// TestSandboxSharesReadOnly: a host directory the runner shares (kaas's kube binaries) is
// at the same path in the machine, runnable and read-only, and a path below a shared
// directory's parent (kaas's machine directory beside it) is the machine's own to write.
func TestSandboxSharesReadOnly(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "k")
	code, out, errOut := run(t, p, id, nil, sharedDir+"/hello")
	if code != 0 || out != "hello from the host\n" {
		t.Fatalf("run %s/hello in the machine: exit %d %q %s", sharedDir, code, out, errOut)
	}
	if code, _, _ := run(t, p, id, nil, "touch", sharedDir+"/x"); code == 0 {
		t.Errorf("the machine wrote in the shared %s", sharedDir)
	}
	d := filepath.Join(filepath.Dir(sharedDir), "machines", id)
	if code, _, errOut := run(t, p, id, nil, "sh", "-c", `mkdir -p "$1" && echo data >"$1/f" && cat "$1/f"`, "sh", d); code != 0 {
		t.Errorf("the machine cannot write its directory %s: %s", d, errOut)
	}
	if _, err := os.Stat(d); err == nil {
		t.Errorf("the machine's directory %s appeared on the host", d)
	}
}

// TestSandboxSharesMountsBelow: a shared or system directory with a mount below it (a file
// bound over a program, as .ci/without-tools does to /usr; /etc/resolv.conf in a container)
// reaches the machine whole and read-only all the way down, even where the mount below is
// writable by everyone on the host. A plain bind of such a directory is refused inside the
// machine's user namespace (EINVAL: it would uncover what the mount hides), so no machine
// came up on such a host.
func TestSandboxSharesMountsBelow(t *testing.T) {
	p := kernelProvider(t)
	below := filepath.Join(sharedDir, "below")
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", below, "tmpfs", 0, "mode=0777,size=1m"); err != nil {
		t.Fatalf("mount a tmpfs below the shared directory: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(below, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(below, "f"), []byte("below\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := upMachine(t, p, "m")
	if code, out, errOut := run(t, p, id, nil, "cat", below+"/f"); code != 0 || out != "below\n" {
		t.Fatalf("read %s/f in the machine: exit %d %q %s", below, code, out, errOut)
	}
	if code, _, _ := run(t, p, id, nil, "touch", below+"/x"); code == 0 {
		t.Errorf("the machine wrote in %s, a writable mount below a read-only shared directory", below)
	}
}

// TestSandboxDaemonsOutliveTheirJob: kaas's bootstrap starts etcd and the API server in the
// background (setsid, output to a log) and a later job checks them with kill -0; a job whose
// background process keeps its output open still returns.
func TestSandboxDaemonsOutliveTheirJob(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "d")
	start := `setsid sleep 300 >>/tmp/d.log 2>&1 </dev/null & echo $! >/tmp/d.pid`
	if code, _, errOut := run(t, p, id, nil, "sh", "-c", start); code != 0 {
		t.Fatalf("start a daemon: exit %d: %s", code, errOut)
	}
	if code, _, errOut := run(t, p, id, nil, "sh", "-c", `kill -0 "$(cat /tmp/d.pid)"`); code != 0 {
		t.Errorf("the daemon did not outlive its job: exit %d: %s", code, errOut)
	}
	// run fails the test when Exec does not return within its 30 s deadline (the sleep holds
	// the output for 300 s).
	code, out, _ := run(t, p, id, nil, "sh", "-c", "sleep 300 & echo started")
	if code != 0 || out != "started\n" {
		t.Errorf("a job leaving a process on its output: exit %d, %q", code, out)
	}
}

// TestSandboxDiskIsPrivate: the machine's root filesystem on the host is closed to the host's
// other users, even for a file the machine made world-readable (kaas keeps cluster keys there).
func TestSandboxDiskIsPrivate(t *testing.T) {
	p := kernelProvider(t)
	id := upMachine(t, p, "p")
	if code, _, errOut := run(t, p, id, nil, "sh", "-c", "echo secret >/f; chmod 644 /f"); code != 0 {
		t.Fatal(errOut)
	}
	f := filepath.Join(diskDir, p.Namespace(id), "rootfs", "f")
	if b, err := os.ReadFile(f); err != nil || string(b) != "secret\n" {
		t.Fatalf("the machine's /f is not at %s: %q %v", f, b, err)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", f).CombinedOutput()
	if err == nil || strings.Contains(string(out), "secret") {
		t.Errorf("the host's nobody read the machine's /f at %s: %s", f, out)
	}
}
