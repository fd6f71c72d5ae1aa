package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/ports"
)

// endpoints mirrors the launcher's HOME/endpoints.json.
type endpoints struct {
	NATS string `json:"nats"`
	// NATSUser and NATSPasswordFile are the embedded NATS's operator user and its password.
	NATSUser         string `json:"nats_user"`
	NATSPasswordFile string `json:"nats_password_file"`
	Database         string `json:"database"`
	// Gateway is the Go gateway's "host:port" (gRPC, gRPC-Web and Connect), when it runs.
	Gateway  string `json:"gateway,omitempty"`
	Services []struct {
		Name  string `json:"name"`
		GRPC  string `json:"grpc"`
		Admin string `json:"admin"`
		PID   int    `json:"pid"`
	} `json:"services"`
}

// repoRoot is the repository root: the e2e package lives one level below it.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("no go.work in %s: run the e2e tests from the repository", root)
	}
	return root
}

// newHome makes a runtime home the postgres user can traverse: a private cluster runs as
// postgres when the tests run as root, and t.TempDir's directories are mode 0700.
func newHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for _, dir := range []string{home, filepath.Dir(home)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// buildLauncher compiles plinth-up the way `make up` does, once for the whole test binary
// (the tests that start a suite run in parallel; one build serves them all).
func buildLauncher(t *testing.T, root string) string {
	t.Helper()
	launcherBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "plinth-e2e-launcher-")
		if err != nil {
			launcherBuild.err = err
			return
		}
		launcherBuild.dir = dir
		launcherBuild.bin = filepath.Join(dir, "plinth-up")
		cmd := exec.Command("go", "build", "-o", launcherBuild.bin, "./deploy/cmd/plinth-up")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			launcherBuild.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if launcherBuild.err != nil {
		t.Fatalf("build launcher: %v", launcherBuild.err)
	}
	return launcherBuild.bin
}

// launcherBuild is buildLauncher's one build; TestMain removes its directory.
var launcherBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if launcherBuild.dir != "" {
		_ = os.RemoveAll(launcherBuild.dir)
	}
	os.Exit(code)
}

// portsFree reports whether every port in ports can be bound on 127.0.0.1 now.
func portsFree(ports ...int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// freeOffset finds a port offset under which NATS, the gateway and every service port the
// launcher may assign (kaas's REST API on 7203 included) are free, so the test runs beside a
// developer's `make up`. Each test passes its own
// base, so tests running in parallel search disjoint bands. Offsets keep every port below
// 20000: above are pglocal's picks and, from 32768, the kernel's ephemeral ports.
func freeOffset(t *testing.T, base int) int {
	t.Helper()
	// Each test has its own band (bases 1700 apart, see offsetBands): a suite at offset O
	// takes 4222+O, 7000..7339+O (7300..7339: the dev Ceph) and the gateway's 8080+O and
	// 8180+O, so two bands never share a port while the tests run in parallel. Within a band
	// only small shifts are tried, which keep that true.
	for offset := base; offset <= base+100; offset += 50 {
		ports := []int{4222 + offset, 8080 + offset, 8180 + offset}
		for p := 7000; p < 7340; p++ {
			ports = append(ports, p+offset)
		}
		if portsFree(ports...) {
			return offset
		}
	}
	t.Fatalf("no port offset in %d-%d with free ports", base, base+100)
	return 0
}

// Port offset bands of the e2e tests that start a suite (freeOffset): adjacent bands are
// 1700 apart, so no suite's NATS, service, admin or gateway port falls in another's.
const (
	bandJourneys = 2000 + 1700*iota
	bandTilt
	bandInfra
	bandConsole
	bandMakeUp
	bandPrivatePostgres
	bandFixture
	bandDevCeph
	bandFresh
	bandAfterLast // not a band: where the next one would start

	// bandCompose is TestComposeStack's, below every other band: docker-compose.yaml
	// publishes 4222..8181, so a band after bandAfterLast would reach past ports.Min. Shifted by
	// -3000 (down to -3100), its ports are 1122..5181: above the privileged ports, below the
	// lowest port of bandJourneys (4222+2000), and clear of a host's own 4222 and 5432.
	bandCompose = -3000
	// bandComposeFaults is TestComposeFaults': 500 above bandCompose (ports 1622..5681), so
	// the two compose projects can run side by side (no port of one is a port of the other at
	// any shift composeOffset tries).
	bandComposeFaults = -2500
)

// TestOffsetBandsBelowRandomPorts: the highest port a band may take (its gateway's admin port
// at the band's last shift) stays below ports.Min, where pglocal, kubetest and cephtest pick
// ports at random; a band above it failed CI with "no port offset … with free ports" when a
// test's etcd had picked a port inside it.
func TestOffsetBandsBelowRandomPorts(t *testing.T) {
	last := bandAfterLast - 1700
	if highest := 8180 + last + 100; highest >= ports.Min {
		t.Fatalf("the last band's highest port %d is at or above ports.Min %d", highest, ports.Min)
	}
	// The compose bands, at each shift composeOffset tries: above the privileged ports, below
	// every other band, never a host's own NATS or Postgres port, and apart from each other.
	taken := map[int]string{}
	for _, band := range []struct {
		name   string
		offset int
	}{{"bandCompose", bandCompose}, {"bandComposeFaults", bandComposeFaults}} {
		mine := map[int]bool{}
		for shift := 0; shift <= 100; shift += 50 {
			for _, p := range composePorts {
				q := p + band.offset - shift
				if q < 1024 || q >= 4222+bandJourneys || q == 4222 || q == 5432 {
					t.Fatalf("%s puts %d at %d: outside 1024..%d or a host's NATS/Postgres port", band.name, p, q, 4222+bandJourneys-1)
				}
				if other, ok := taken[q]; ok && other != band.name {
					t.Fatalf("%s and %s can both publish on %d", other, band.name, q)
				}
				mine[q] = true
			}
		}
		for q := range mine {
			taken[q] = band.name
		}
	}
}

// launcher is one running plinth-up.
type launcher struct {
	cmd  *exec.Cmd
	home string
	log  *lockedBuffer
	done chan struct{}
	err  error
}

// withoutSuiteEnv drops variables that would point the suite at other infrastructure, and
// turns the launcher's dev Ceph off: ~400 MB and ~15 s per suite that does not look at it. A
// suite that does appends PLINTH_NO_CEPH=0 (the last value of a variable wins).
func withoutSuiteEnv(env []string) []string {
	kept := []string{"PLINTH_NO_CEPH=1"}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PLINTH_DATABASE_URL", "PLINTH_NATS_URL", "PLINTH_HOME", "PLINTH_PORT_OFFSET",
			"PLINTH_DATABASE_NAME", "PLINTH_PRIVATE_POSTGRES", "PLINTH_LVMD_CONFIG", "PLINTH_LVMD_VG",
			"PLINTH_NO_CEPH", "PLINTH_STATS_CEPH_URL", "PLINTH_CNPGI_CONFIG", "TILT_PORT", "TILT_HOST":
			continue
		}
		kept = append(kept, kv)
	}
	return kept
}

// startLauncher runs bin with its runtime home and port offset; extra is added to the
// environment. Variables that would point it at other infrastructure are removed.
func startLauncher(t *testing.T, bin, root, home string, offset int, extra ...string) *launcher {
	t.Helper()
	return startLauncherWithFlags(t, bin, root, home, offset, nil, extra...)
}

// startLauncherWithFlags is startLauncher with flags of plinth-up that have no environment
// variable (-dev-oidc).
func startLauncherWithFlags(t *testing.T, bin, root, home string, offset int, flags []string, extra ...string) *launcher {
	t.Helper()
	env := append(withoutSuiteEnv(os.Environ()), "PLINTH_HOME="+home, "PLINTH_PORT_OFFSET="+strconv.Itoa(offset))
	l := &launcher{home: home, log: &lockedBuffer{}, done: make(chan struct{})}
	l.cmd = exec.Command(bin, append([]string{"-root", root}, flags...)...)
	l.cmd.Env = append(env, extra...)
	l.cmd.Stdout, l.cmd.Stderr = l.log, l.log
	if err := l.cmd.Start(); err != nil {
		t.Fatalf("start launcher: %v", err)
	}
	go func() {
		l.err = l.cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = l.cmd.Process.Kill()
			<-l.done
		}
		if t.Failed() {
			t.Logf("launcher output:\n%s", l.log.String())
		}
	})
	return l
}

// waitEndpoints waits until the launcher reports ready by writing endpoints.json.
func (l *launcher) waitEndpoints(t *testing.T, timeout time.Duration) endpoints {
	t.Helper()
	path := filepath.Join(l.home, "endpoints.json")
	deadline := time.After(timeout)
	for {
		if data, err := os.ReadFile(path); err == nil {
			var e endpoints
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatalf("endpoints.json: %v\n%s", err, data)
			}
			return e
		}
		select {
		case <-l.done:
			t.Fatalf("launcher exited before it was ready: %v", l.err)
		case <-deadline:
			t.Fatalf("launcher not ready after %s (no %s)", timeout, path)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// interrupt sends SIGINT, as Ctrl-C does, and requires a clean exit within timeout.
func (l *launcher) interrupt(t *testing.T, timeout time.Duration) {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("interrupt launcher: %v", err)
	}
	select {
	case <-l.done:
	case <-time.After(timeout):
		t.Fatalf("launcher still running %s after SIGINT", timeout)
	}
	if l.err != nil {
		t.Fatalf("launcher exit after SIGINT: %v, want a clean exit", l.err)
	}
	if _, err := os.Stat(filepath.Join(l.home, "endpoints.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("endpoints.json still present after exit (err %v)", err)
	}
}

// processesUsing lists processes whose command line mentions dir: the service binaries run
// from HOME/bin and a private postmaster runs with -D HOME/postgres.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var found []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); err == nil && isZombie(st) {
			continue // exited, waiting for its parent to reap it
		}
		found = append(found, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return found
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// skipOrFail skips, or fails under PLINTH_TEST_STRICT=1: CI wants a missing prerequisite to
// fail, not to pass silently.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("PLINTH_TEST_STRICT") == "1" {
		t.Fatalf(format+" (PLINTH_TEST_STRICT=1 turns this skip into a failure)", args...)
	}
	t.Skipf(format, args...)
}
