package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tiltTimeout bounds `tilt ci`: on a cold machine its infra resource builds every service.
const tiltTimeout = 12 * time.Minute

// TestTiltCI runs `bin/tilt ci` on the root Tiltfile, as a developer's `tilt up` would start it,
// in its own PLINTH_HOME, port offset, database, volume group name and Tilt port: it must
// exit 0 (every resource ready: infra, then each service behind its /readyz), its snapshot
// must list one ready resource per binary under services/*/cmd, the services must have been
// run by the launcher with its preparations (runner token, certificates, volume group), and
// nothing may be left running afterwards.
func TestTiltCI(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	tilt := filepath.Join(root, "bin", "tilt")
	if _, err := os.Stat(tilt); err != nil {
		skipOrFail(t, "%s is missing: build it with make tools-tilt", tilt)
	}
	home := newHome(t)
	offset := freeOffset(t, bandTilt)
	suffix := rand.Uint32()
	dbName := fmt.Sprintf("plinth_e2e_tilt_%d", suffix)
	vg := fmt.Sprintf("plinth_e2e_tilt_%d", suffix)
	snapshot := filepath.Join(t.TempDir(), "snapshot.json")
	tiltPort := 10350 + offset/250 // one per offset band, below the bands' service ports
	if !portsFree(tiltPort, 8080+offset, 8180+offset) {
		t.Fatalf("Tilt's port %d or the gateway's %d/%d is taken", tiltPort, 8080+offset, 8180+offset)
	}
	t.Cleanup(func() { removeDevVG(t, home, vg) })

	ctx, cancel := context.WithTimeout(context.Background(), tiltTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tilt, "ci", "--file", filepath.Join(root, "Tiltfile"),
		"--port", strconv.Itoa(tiltPort), "--web-mode", "prod", "--timeout", tiltTimeout.String(),
		"--output-snapshot-on-exit", snapshot)
	cmd.Dir = root
	cmd.Env = append(withoutSuiteEnv(os.Environ()),
		"PLINTH_HOME="+home, "PLINTH_PORT_OFFSET="+strconv.Itoa(offset),
		"PLINTH_DATABASE_NAME="+dbName, "PLINTH_LVMD_VG="+vg)
	// Its own process group: should the test time out, every process Tilt started goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	defer dropDatabase(t, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", dbName)
	log := out.String()
	if err != nil {
		t.Fatalf("tilt ci: %v after %s\n%s", err, took.Round(time.Second), log)
	}
	t.Logf("tilt ci: every resource ready in %s", took.Round(time.Second))

	ready := readySnapshot(t, snapshot)
	want := append([]string{"infra"}, serviceBinaries(t, root)...)
	lvmdLine := "lvmd-agent: volume group " + vg
	if _, err := exec.LookPath("lvm"); os.Geteuid() != 0 || err != nil {
		// The Tiltfile leaves lvmd-agent out where the launcher cannot make its volume group,
		// and the gateway does not wait for it.
		want = slices.DeleteFunc(want, func(b string) bool { return b == "lvmd-agent" })
		lvmdLine = "lvmd-agent left out"
	}
	for _, name := range want {
		// The snapshot can be written before the last resource's status catches up with its
		// probe (Tilt updates its UI resources asynchronously): its probe's success in the log
		// is the same fact.
		if status, ok := ready[name]; (!ok || status != "ok") && !probedReady(log, name) {
			t.Errorf("resource %s: runtime status %q in Tilt's snapshot and no readiness success in its log, want ok", name, status)
		}
		delete(ready, name)
	}
	if len(ready) > 0 {
		t.Errorf("resources that are no service binary: %v", ready)
	}
	for _, name := range want[1:] {
		if !strings.Contains(log, "plinth-up: running "+filepath.Join(home, "bin", name)) {
			t.Errorf("the launcher did not run %s under Tilt", name)
		}
	}
	for _, line := range []string{
		"infrastructure ready", "SUCCESS. All workloads are healthy.",
		"registered with vagrant-server", // the runner got its token from vagrant-server
		"generated cnpgi-plugin mutual-TLS certificates",
		lvmdLine,
	} {
		if !strings.Contains(log, line) {
			t.Errorf("tilt ci's output lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("tilt ci output:\n%s", log)
	}
	// Tilt stops its servers when it exits; give their graceful shutdown a moment.
	var left []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if left = processesUsing(t, home); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("processes left after tilt ci exited: %v", left)
	}
}

// probedReady reports whether tilt's output shows resource name's readiness probe succeeding
// (lines of its pane read "<name> │ [readiness probe: success] ...", a long name cut to
// "<prefix>…").
func probedReady(log, name string) bool {
	for _, line := range strings.Split(log, "\n") {
		pane, text, ok := strings.Cut(line, "│")
		if !ok || !strings.HasPrefix(strings.TrimSpace(text), "[readiness probe: success]") {
			continue
		}
		pane = strings.TrimSpace(pane)
		if cut, short := strings.CutSuffix(pane, "…"); pane == name || short && strings.HasPrefix(name, cut) {
			return true
		}
	}
	return false
}

// readySnapshot reads the runtime status of every resource from Tilt's exit snapshot.
func readySnapshot(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("tilt wrote no snapshot: %v", err)
	}
	var s struct {
		View struct {
			UIResources []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
				Status struct {
					RuntimeStatus string `json:"runtimeStatus"`
				} `json:"status"`
			} `json:"uiResources"`
		} `json:"view"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	status := map[string]string{}
	for _, r := range s.View.UIResources {
		if r.Metadata.Name != "(Tiltfile)" {
			status[r.Metadata.Name] = r.Status.RuntimeStatus
		}
	}
	return status
}

// serviceBinaries lists services/*/cmd/* directories holding a non-test Go file: what the
// launcher runs, and so what the Tiltfile must.
func serviceBinaries(t *testing.T, root string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "services", "*", "cmd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.go"))
		if slices.ContainsFunc(files, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
			names = append(names, filepath.Base(d))
		}
	}
	if len(names) == 0 {
		t.Fatal("no service binaries under services/*/cmd")
	}
	return names
}

// ownDevVG gives a suite its own volume group for lvmd-agent (as root with lvm2 the launcher
// makes one): a test's must not be the developer's `plinth`, and must go with the test. It
// returns the environment variable to pass.
func ownDevVG(t *testing.T, home string) string {
	vg := fmt.Sprintf("plinth_e2e_%d", rand.Uint32())
	t.Cleanup(func() { removeDevVG(t, home, vg) })
	return "PLINTH_LVMD_VG=" + vg
}

// removeDevVG removes the loop-backed volume group the launcher made for lvmd-agent: volume
// groups outlive the test's home.
func removeDevVG(t *testing.T, home, vg string) {
	agent := filepath.Join(home, "bin", "lvmd-agent")
	if _, err := os.Stat(filepath.Join(home, "lvm")); err != nil {
		return
	}
	if out, err := exec.Command(agent, "dev-vg", "-dir", filepath.Join(home, "lvm"), "-vg", vg, "-remove").CombinedOutput(); err != nil {
		t.Errorf("remove volume group %s: %v\n%s", vg, err, out)
	}
}
