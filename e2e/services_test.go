package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLauncherRunsServices points the launcher at testdata/fixture, whose fake services follow
// the runtime conventions, so starting, wiring, checking and stopping services is tested
// whatever the real repository has landed: a TCP service from the table, a unix-socket one, a
// dependent client-only binary, and one the table does not know.
func TestLauncherRunsServices(t *testing.T) {
	t.Parallel()
	fixture, err := filepath.Abs(filepath.Join("testdata", "fixture"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildLauncher(t, repoRoot(t))
	home := newHome(t)
	offset := freeOffset(t, bandFixture)
	// The user's own device classes: the launcher passes them through instead of making its
	// loop-backed volume group (which needs root and the real agent's dev-vg command).
	lvmdYAML := filepath.Join(home, "own-lvmd.yaml")
	if err := os.WriteFile(lvmdYAML, []byte("device-classes: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := startLauncher(t, bin, fixture, home, offset, "PLINTH_DATABASE_NAME=plinth_e2e_fixture", "PLINTH_LVMD_CONFIG="+lvmdYAML)
	e := l.waitEndpoints(t, readyTimeout)
	defer dropDatabase(t, e.Database, "plinth_e2e_fixture")

	var names []string
	for _, s := range e.Services {
		names = append(names, s.Name)
		checkAdmin(t, s.Name, s.Admin)
		if s.GRPC != "" {
			checkGRPC(t, s.Name, s.GRPC)
		}
	}
	// Table order first (runner after its server), then binaries the table does not know.
	if want := []string{"vagrant-server", "lvmd-agent", "vagrant-runner", "echo"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	if got, want := e.Services[1].GRPC, "unix://"+filepath.Join(home, "lvmd.sock"); got != want {
		t.Errorf("lvmd-agent gRPC at %s, want %s", got, want)
	}
	if e.Services[2].GRPC != "" {
		t.Errorf("vagrant-runner serves no gRPC, endpoints say %s", e.Services[2].GRPC)
	}
	log := l.log.String()
	for _, want := range []string{"echo (services/echo) is not in the launcher's service table", "vagrant-runner serving",
		"lvmd-agent: device classes from PLINTH_LVMD_CONFIG=" + lvmdYAML} {
		if !strings.Contains(log, want) {
			t.Errorf("launcher output lacks %q", want)
		}
	}
	for _, s := range e.Services {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.PID))
		if want := filepath.Join(home, "bin", s.Name); err != nil || !strings.HasPrefix(string(cmdline), want+"\x00") {
			t.Errorf("%s: endpoints.json pid %d runs %q (%v), want %s", s.Name, s.PID, cmdline, err, want)
		}
	}
	if running := processesUsing(t, home); len(running) < len(e.Services) {
		t.Fatalf("found %d service processes, want %d: %v", len(running), len(e.Services), running)
	}

	l.interrupt(t, stopTimeout)
	if left := processesUsing(t, home); len(left) > 0 {
		t.Errorf("processes left after the launcher exited: %v", left)
	}
	for _, s := range []string{"vagrant-server", "lvmd-agent", "vagrant-runner", "echo"} {
		if !strings.Contains(l.log.String(), s+" stopping") {
			t.Errorf("%s was not stopped gracefully (no %q in the output)", s, s+" stopping")
		}
	}
}
