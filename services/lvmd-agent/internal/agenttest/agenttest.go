// Package agenttest runs the real lvmd-agent binary for tests that need a process of their
// own: one killed with SIGKILL mid-job, or one driven by TopoLVM's generated client (whose
// proto registrations clash with Plinth's own in one test binary). It imports no API
// package, so either kind of test can use it.
package agenttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm/lvmtest"
)

// Binary builds cmd/lvmd-agent once per test binary. moduleRoot is the package directory's
// path to the module root ("../.." from internal/x).
func Binary(t testing.TB, moduleRoot string) string {
	t.Helper()
	return testenv.Binary(t, "./"+filepath.Join(moduleRoot, "cmd", "lvmd-agent"))
}

// Env is what an agent process needs: a database schema, NATS, volume groups and a
// directory with lvmd.yaml and the socket.
type Env struct {
	DatabaseURL, NATSURL string
	VGs                  []*lvmtest.VG
	Dir                  string
	Node                 string
}

// NewEnv prepares volume groups (the first class "ssd" is the default, spare 0) and writes
// lvmd.yaml.
func NewEnv(t *testing.T, classes int, size int64) *Env {
	t.Helper()
	e := &Env{DatabaseURL: testenv.DB(t).URL, NATSURL: testenv.NATS(t), Node: testenv.UniqueName(t, "node")}
	dir, err := os.MkdirTemp("", "lvmd-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e.Dir = dir
	var y strings.Builder
	y.WriteString("socket-name: " + e.Socket() + "\ndevice-classes:\n")
	for i := range classes {
		vg := lvmtest.New(t, lvmtest.Options{Size: size})
		e.VGs = append(e.VGs, vg)
		fmt.Fprintf(&y, "  - name: %s\n    volume-group: %s\n    default: %v\n    spare-gb: 0\n", []string{"ssd", "hdd", "nvme"}[i], vg.Name, i == 0)
	}
	if err := os.WriteFile(filepath.Join(dir, "lvmd.yaml"), []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// AddConfig appends yaml (top-level keys such as lvcreate-option-classes) to lvmd.yaml; call
// it before Start.
func (e *Env) AddConfig(t *testing.T, yaml string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(e.Dir, "lvmd.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(yaml)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Socket is the agent's unix socket.
func (e *Env) Socket() string { return filepath.Join(e.Dir, "lvmd.sock") }

// Process is a running agent.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	Logs *testenv.SyncBuffer
}

// Start runs the agent binary with the env's settings plus extra (KEY=VALUE) until the test
// ends, and waits until its socket accepts connections.
func (e *Env) Start(t *testing.T, bin string, extra ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLINTH_DATABASE_URL="+e.DatabaseURL, "PLINTH_NATS_URL="+e.NATSURL,
		"PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug",
		"PLINTH_LVMD_CONFIG="+filepath.Join(e.Dir, "lvmd.yaml"), "PLINTH_LVMD_NODE_NAME="+e.Node)
	cmd.Env = append(cmd.Env, extra...)
	p := &Process{cmd: cmd, done: make(chan struct{}), Logs: &testenv.SyncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.Logs, p.Logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop(t) })
	deadline := time.Now().Add(3 * time.Minute) // a deadline: seconds here, longer in a kernelvm guest
	for {
		if _, err := os.Stat(e.Socket()); err == nil && p.serving() {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("the agent exited at start:\n%s", p.Logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not start serving:\n%s", p.Logs.String())
		}
	}
}

func (p *Process) serving() bool { return strings.Contains(p.Logs.String(), `"msg":"serving"`) }

// Kill stops the agent with SIGKILL: no cleanup of its own runs.
func (p *Process) Kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop ends the agent with SIGTERM (SIGKILL after 30s) and fails t if it had to be killed.
func (p *Process) Stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("the agent ignored SIGTERM for 30s")
	}
}
