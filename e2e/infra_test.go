package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInfraOnlyAndRun drives the two modes the Tiltfile uses, without Tilt, on the fixture:
// `plinth-up -infra-only` holds the home, serves /readyz once NATS and Postgres are up and
// writes a private infra.json; `plinth-up -run <binary>` becomes that binary (same pid) with
// the environment make up gives it, and stops gracefully on SIGTERM; -run refuses an unknown
// binary and a home without a running -infra-only.
func TestInfraOnlyAndRun(t *testing.T) {
	t.Parallel()
	fixture, err := filepath.Abs(filepath.Join("testdata", "fixture"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildLauncher(t, repoRoot(t))
	home := newHome(t)
	offset := freeOffset(t, bandInfra)
	lvmdYAML := filepath.Join(home, "own-lvmd.yaml")
	if err := os.WriteFile(lvmdYAML, []byte("device-classes: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(withoutSuiteEnv(os.Environ()), "PLINTH_HOME="+home, "PLINTH_PORT_OFFSET="+strconv.Itoa(offset),
		"PLINTH_DATABASE_NAME=plinth_e2e_infra_only", "PLINTH_LVMD_CONFIG="+lvmdYAML)
	launch := func(args ...string) (*exec.Cmd, *lockedBuffer) {
		cmd := exec.Command(bin, append([]string{"-root", fixture}, args...)...)
		cmd.Env = env
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			if t.Failed() {
				t.Logf("plinth-up %v output:\n%s", args, out.String())
			}
		})
		return cmd, out
	}

	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(bin, append([]string{"-root", fixture}, args...)...)
		cmd.Env = env
		return cmd.CombinedOutput()
	}
	if out, err := run("-run", "vagrant-server"); err == nil || !strings.Contains(string(out), "no plinth-up -infra-only is running") {
		t.Errorf("-run without infra: %v %s; want a refusal naming -infra-only", err, out)
	}

	infra, infraOut := launch("-infra-only")
	waitReadyz(t, fmt.Sprintf("127.0.0.1:%d", 7100+offset), infra)
	defer dropDatabase(t, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "plinth_e2e_infra_only")
	if fi, err := os.Stat(filepath.Join(home, "infra.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("infra.json: %v, mode %v; want it private (0600): it holds the database URL", err, fi.Mode())
	}
	if left := processesUsing(t, filepath.Join(home, "bin")); len(left) > 0 {
		t.Errorf("-infra-only started services: %v", left)
	}

	server, serverOut := launch("-run", "vagrant-server")
	waitReadyz(t, fmt.Sprintf("127.0.0.1:%d", 7104+offset), server)
	checkGRPC(t, "vagrant-server", fmt.Sprintf("127.0.0.1:%d", 7004+offset))
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", server.Process.Pid))
	if want := filepath.Join(home, "bin", "vagrant-server") + "\x00"; !strings.HasPrefix(string(cmdline), want) {
		t.Errorf("-run's process runs %q, want it replaced by %s", cmdline, want)
	}
	agent, _ := launch("-run", "lvmd-agent")
	waitReadyz(t, fmt.Sprintf("127.0.0.1:%d", 7105+offset), agent)
	checkGRPC(t, "lvmd-agent", "unix://"+filepath.Join(home, "lvmd.sock"))

	if out, err := run("-run", "nope"); err == nil || !strings.Contains(string(out), "there are: echo, lvmd-agent, vagrant-runner, vagrant-server") {
		t.Errorf("-run nope: %v %s; want a refusal listing the binaries", err, out)
	}

	for _, c := range []*exec.Cmd{server, agent} {
		_ = c.Process.Signal(syscall.SIGTERM)
		if err := c.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v, want a clean exit", c.Args, err)
		}
	}
	if !strings.Contains(serverOut.String(), "vagrant-server stopping") {
		t.Errorf("vagrant-server did not stop gracefully:\n%s", serverOut.String())
	}
	_ = infra.Process.Signal(syscall.SIGINT)
	if err := infra.Wait(); err != nil {
		t.Errorf("-infra-only after SIGINT: %v\n%s", err, infraOut.String())
	}
	if _, err := os.Stat(filepath.Join(home, "infra.json")); !os.IsNotExist(err) {
		t.Errorf("infra.json left behind (%v)", err)
	}
	// What a killed -infra-only leaves: its file, but nobody holding the home.
	if err := os.WriteFile(filepath.Join(home, "infra.json"), []byte(`{"database_url":"postgres://gone","nats_url":"nats://gone"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("-run", "vagrant-server"); err == nil || !strings.Contains(string(out), "no plinth-up -infra-only is running") {
		t.Errorf("-run on a stale infra.json: %v %s; want a refusal naming -infra-only", err, out)
	}
}

// waitReadyz waits for 200 from http://addr/readyz while cmd's process lives.
func waitReadyz(t *testing.T, addr string, cmd *exec.Cmd) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(readyTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := client.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		// Not yet waited for, so an exited process stays a zombie that /proc still shows.
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)); err != nil || isZombie(st) {
			t.Fatalf("%v exited before http://%s/readyz answered", cmd.Args, addr)
		}
	}
	t.Fatalf("http://%s/readyz not ready after %s", addr, readyTimeout)
}
