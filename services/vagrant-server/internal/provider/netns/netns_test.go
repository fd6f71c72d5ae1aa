package netns_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider/netns"
)

// kernelProvider returns a provider on a bridge, subnet and name prefix of its own, so the test
// cannot touch a runner's machines on this host, and removes the bridge afterwards. It skips
// (fails under PLINTH_TEST_STRICT=1) without root, iproute2 or ping.
func kernelProvider(t testing.TB) *netns.Provider {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "netns provider tests need root: run them as root (CI does)")
	}
	for _, prog := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(prog); err != nil {
			testenv.SkipOrFail(t, prog+" is not installed (apt-get install iproute2 iputils-ping)")
		}
	}
	sharedDir, diskDir = shareDir(t), searchableTempDir(t)
	suffix := randomHex(t, 4)
	third, err := rand.Int(rand.Reader, big.NewInt(150))
	if err != nil {
		t.Fatal(err)
	}
	p, err := netns.New(netns.Options{
		Bridge:          "pltst" + suffix,
		Subnet:          netip.MustParsePrefix("10.213." + third.Add(third, big.NewInt(100)).String() + ".0/24"),
		NamespacePrefix: "plinthtest-",
		LinkPrefix:      "ptv",
		LockDir:         t.TempDir(),
		StopGrace:       time.Second,
		Sandbox: &netns.Sandbox{Dir: diskDir, State: t.TempDir(), Share: []string{sharedDir},
			Pids: testPids, Memory: testMemory, CPUs: 0.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(context.Background()); err != nil {
		testenv.SkipOrFail(t, "netns does not work here: "+err.Error())
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "pltst"+suffix).Run() })
	return p
}

// The sandbox's settings in these tests: small limits, and a shared directory with a program.
const (
	testPids   = 128
	testMemory = 256 << 20
)

// sharedDir is the host directory the test's machines see read-only (kaas's kube binaries);
// diskDir holds their root filesystems.
var sharedDir, diskDir string

// shareDir makes a directory holding a program, hello, for the machines to run; its path is
// searchable by the machines' unprivileged uid, as kaas's bin directory is.
func shareDir(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(searchableTempDir(t), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "hello"), []byte("#!/bin/sh\necho hello from the host\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// searchableTempDir is a temporary directory that others may search, down from /: the
// machines' uid must reach their root filesystems and shared directories.
func searchableTempDir(t testing.TB) string {
	t.Helper()
	top := t.TempDir()
	for d := top; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return top
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// run execs argv in machine id and returns its exit code and output.
func run(t *testing.T, p *netns.Provider, id string, env []string, argv ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := p.Exec(ctx, id, provider.Command{Args: argv, Env: env, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("exec %v in %s: %v", argv, id, err)
	}
	return code, stdout.String(), stderr.String()
}

func wantState(t *testing.T, p *netns.Provider, id, want string) provider.State {
	t.Helper()
	st, err := p.Status(context.Background(), id)
	if err != nil {
		t.Fatalf("status %s: %v", id, err)
	}
	if st.ID != want {
		t.Fatalf("status %s = %+v, want %s", id, st, want)
	}
	return st
}

// TestMachineLifecycle drives two machines through the real kernel: up, status, exec, ping
// between them, halt, up again, destroy, and checks nothing is left behind.
func TestMachineLifecycle(t *testing.T) {
	p := kernelProvider(t)
	ctx := context.Background()
	a, b := "a"+randomHex(t, 4), "b"+randomHex(t, 4)
	t.Cleanup(func() { _ = p.Destroy(ctx, a); _ = p.Destroy(ctx, b) })

	wantState(t, p, a, provider.StateNotCreated)
	for _, id := range []string{a, b, a} { // the second up of a changes nothing
		if err := p.Up(ctx, id); err != nil {
			t.Fatalf("up %s: %v", id, err)
		}
	}
	st := wantState(t, p, a, provider.StateRunning)
	addrA, okA, errA := p.Address(ctx, a)
	addrB, okB, errB := p.Address(ctx, b)
	if !okA || !okB || errA != nil || errB != nil || addrA.Addr() == addrB.Addr() {
		t.Fatalf("addresses a=%v (%v %v) b=%v (%v %v): want two distinct ones", addrA, okA, errA, addrB, okB, errB)
	}
	if !strings.Contains(st.Long, addrA.String()) {
		t.Errorf("running state %q does not say the address %s", st.Long, addrA)
	}

	code, out, _ := run(t, p, a, nil, "ip", "addr")
	if code != 0 || !strings.Contains(out, "inet "+addrA.String()) {
		t.Fatalf("ip addr in %s: exit %d, output:\n%s\nwant inet %s", a, code, out, addrA)
	}
	code, out, _ = run(t, p, a, nil, "ping", "-c", "2", "-W", "2", addrB.Addr().String())
	if code != 0 {
		t.Fatalf("ping %s from %s: exit %d\n%s", addrB.Addr(), a, code, out)
	}
	code, out, _ = run(t, p, a, nil, "ip", "route")
	if strings.Contains(out, "default") {
		t.Errorf("machine has a default route, traffic could leave the host:\n%s", out)
	}

	code, out, errOut := run(t, p, a, []string{"GREETING=hello"}, "sh", "-c", `echo "$GREETING"; echo oops >&2; exit 3`)
	if code != 3 || out != "hello\n" || errOut != "oops\n" {
		t.Errorf("exec: exit %d stdout %q stderr %q; want 3, hello, oops", code, out, errOut)
	}

	// The machine's disk outlives halt (kaas keeps etcd's data and its machine key there).
	if code, _, errOut := run(t, p, a, nil, "sh", "-c", "mkdir -p /var/lib/kept && echo kept >/var/lib/kept/f"); code != 0 {
		t.Fatalf("write the machine's disk: %s", errOut)
	}
	// A process left running in the machine must not survive halt.
	if code, _, _ := run(t, p, a, nil, "sh", "-c", "sleep 1000 >/dev/null 2>&1 &"); code != 0 {
		t.Fatalf("starting a background process: exit %d", code)
	}
	if err := p.Halt(ctx, a); err != nil {
		t.Fatalf("halt: %v", err)
	}
	wantState(t, p, a, provider.StatePoweroff)
	if pids, _ := exec.Command("ip", "netns", "pids", p.Namespace(a)).Output(); len(bytes.TrimSpace(pids)) > 0 {
		t.Errorf("processes left in the halted machine: %s", pids)
	}
	if _, err := p.Exec(ctx, a, provider.Command{Args: []string{"true"}}); !errors.Is(err, provider.ErrNotRunning) {
		t.Errorf("exec in a halted machine: %v, want ErrNotRunning", err)
	}
	if err := p.Up(ctx, a); err != nil {
		t.Fatalf("up after halt: %v", err)
	}
	if again, _, _ := p.Address(ctx, a); again != addrA {
		t.Errorf("address after halt and up = %s, want the old %s", again, addrA)
	}
	if code, out, errOut := run(t, p, a, nil, "cat", "/var/lib/kept/f"); code != 0 || out != "kept\n" {
		t.Errorf("the machine's disk after halt and up: exit %d %q %s", code, out, errOut)
	}

	for _, id := range []string{a, b, a} { // destroying twice is fine
		if err := p.Destroy(ctx, id); err != nil {
			t.Fatalf("destroy %s: %v", id, err)
		}
	}
	wantState(t, p, a, provider.StateNotCreated)
	netnsList, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link").Output()
	for _, id := range []string{a, b} {
		if strings.Contains(string(netnsList), p.Namespace(id)) {
			t.Errorf("namespace %s left after destroy:\n%s", p.Namespace(id), netnsList)
		}
		if strings.Contains(string(links), "ptv"+id) {
			t.Errorf("veth ptv%s left after destroy:\n%s", id, links)
		}
		if _, err := os.Stat(filepath.Join(diskDir, p.Namespace(id))); !os.IsNotExist(err) {
			t.Errorf("the disk of %s is left after destroy (%v)", id, err)
		}
	}
}

// TestExecCancel checks both cancel kinds end the command and what it started.
func TestExecCancel(t *testing.T) {
	p := kernelProvider(t)
	id := "c" + randomHex(t, 4)
	t.Cleanup(func() { _ = p.Destroy(context.Background(), id) })
	if err := p.Up(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cause error
		argv  []string
	}{
		// The shell ignores SIGTERM, so only the SIGKILL after the grace period ends it.
		{"graceful", context.Canceled, []string{"sh", "-c", "trap '' TERM; echo started; sleep 30 & wait"}},
		{"forced", provider.ErrKilled, []string{"sh", "-c", "echo started; sleep 30 & wait"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			// The cancel comes once the command has started (its first output), not after a
			// fixed delay: on a loaded machine 300 ms once ended inside the start itself.
			started := &firstWrite{c: make(chan struct{})}
			go func() {
				code, err := p.Exec(ctx, id, provider.Command{Args: tc.argv, Stdout: started, Stderr: &bytes.Buffer{}})
				done <- result{code, err}
			}()
			// Bounded by the test's context, not a wall-clock figure: the command sleeps 30 s,
			// so returning at all means the cancel stopped it.
			testCtx, stop := context.WithTimeout(t.Context(), 25*time.Second)
			defer stop()
			select {
			case <-started.c:
				cancel(tc.cause)
			case r := <-done:
				t.Fatalf("Exec returned before its command started: exit %d, %v", r.code, r.err)
			case <-testCtx.Done():
				t.Fatal("the command did not start")
			}
			var r result
			select {
			case r = <-done:
			case <-testCtx.Done():
				t.Fatal("Exec did not return after its context was canceled")
			}
			if !errors.Is(r.err, tc.cause) {
				t.Errorf("exec error %v, want the cancel cause %v", r.err, tc.cause)
			}
			if r.code != 128+9 && r.code != 128+15 {
				t.Errorf("exit %d, want killed by a signal", r.code)
			}
			if left := jobProcesses(t, p.Namespace(id)); len(left) > 0 {
				t.Errorf("processes left after cancel: %v", left)
			}
		})
	}
}

// jobProcesses lists the processes in namespace ns besides the machine's init (its PID 1
// and the sleep that keeps it up), with their command lines.
func jobProcesses(t *testing.T, ns string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, pid := range strings.Fields(string(out)) {
		cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		if c := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")); c != "/init -- sleep infinity" && c != "sleep infinity" && c != "" {
			left = append(left, pid+": "+c)
		}
	}
	return left
}

// A destroyed machine's address goes to the next machine, which has another MAC: the host
// must not keep sending to the old MAC until its neighbour entry goes stale (15-45 s; kaas's
// probe of a new cluster's API server timed out meanwhile).
func TestReusedAddressIsReachableAtOnce(t *testing.T) {
	p := kernelProvider(t)
	ctx := context.Background()
	a, b, keep := "a"+randomHex(t, 4), "b"+randomHex(t, 4), "k"+randomHex(t, 4)
	t.Cleanup(func() { _ = p.Destroy(ctx, a); _ = p.Destroy(ctx, b); _ = p.Destroy(ctx, keep) })
	// Another machine keeps the bridge's carrier up, as a user's machine does: without one the
	// kernel drops the bridge's neighbour entries when its last port goes.
	if err := p.Up(ctx, keep); err != nil {
		t.Fatal(err)
	}
	// A fixed MAC on the bridge, as it has when the kept machine's port is its lowest: should
	// a's port be the lowest, its leaving would change the bridge's MAC, which also drops them.
	bridge := bridgeOf(t, "ptv"+keep)
	if out, err := exec.Command("ip", "link", "set", "dev", bridge, "address", "02:00:00:00:00:01").CombinedOutput(); err != nil {
		t.Fatalf("fix the bridge's MAC: %v: %s", err, out)
	}
	if err := p.Up(ctx, a); err != nil {
		t.Fatal(err)
	}
	addr, _, _ := p.Address(ctx, a)
	if out, err := exec.Command("ping", "-c", "1", "-W", "2", addr.Addr().String()).CombinedOutput(); err != nil {
		t.Fatalf("ping %s (machine a) from the host: %v: %s", addr, err, out) // the host learns a's MAC
	}
	oldMAC := guestMAC(t, p, a)
	if err := p.Destroy(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := p.Up(ctx, b); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := p.Address(ctx, b); again != addr {
		t.Fatalf("machine b got %v, want the freed %v", again, addr)
	}
	neigh, err := exec.Command("ip", "neigh", "show", "to", addr.Addr().String()).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(neigh), oldMAC) {
		t.Fatalf("after b's up the host still sends %s to the destroyed machine's MAC %s: %s", addr.Addr(), oldMAC, neigh)
	}
	if out, err := exec.Command("ping", "-c", "1", "-W", "2", addr.Addr().String()).CombinedOutput(); err != nil {
		t.Fatalf("ping %s (machine b, a's old address) from the host: %v: %s", addr, err, out)
	}
}

// bridgeOf is the bridge host link dev is a port of.
func bridgeOf(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show", "dev", dev).CombinedOutput()
	f := strings.Fields(string(out))
	i := slices.Index(f, "master")
	if err != nil || i < 0 || i+1 >= len(f) {
		t.Fatalf("bridge of %s: %v: %s", dev, err, out)
	}
	return f[i+1]
}

// guestMAC is machine id's MAC address.
func guestMAC(t *testing.T, p *netns.Provider, id string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", p.Namespace(id), "-br", "link", "show", "eth0").CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 3 {
		t.Fatalf("MAC of %s: %v: %s", id, err, out)
	}
	return f[2]
}

// firstWrite closes c at the first write to it and discards what is written.
type firstWrite struct {
	once sync.Once
	c    chan struct{}
}

func (w *firstWrite) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.c) })
	return len(b), nil
}
