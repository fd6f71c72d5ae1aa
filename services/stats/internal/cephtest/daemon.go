package cephtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// daemon is one Ceph daemon running in the foreground as a child of the test binary.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
	err  error         // Wait's result, read after done
}

// startDaemon runs program in the foreground (-f: no fork, no pid file) in its own process
// group, with SIGKILL when the test binary dies: a test killed by -timeout runs no cleanup and
// must not leave daemons behind. The test's cleanup kills the group: the data is thrown away,
// so there is nothing to shut down gracefully for.
func (c *Cluster) startDaemon(t testing.TB, name, program string, args ...string) {
	t.Helper()
	out, err := os.OpenFile(filepath.Join(c.Dir, "log", name+".stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(program, append([]string{"-f", "-c", c.Conf}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("cephtest: start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		_ = out.Close()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	t.Cleanup(d.kill)
}

// kill ends the daemon's process group and waits until the daemon is reaped.
func (d *daemon) kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
	}
}

// exitedDaemon reports a daemon that ended while the cluster should be running.
func (c *Cluster) exitedDaemon() error {
	for _, d := range c.daemons {
		select {
		case <-d.done:
			return fmt.Errorf("%s exited: %v", d.name, d.err)
		default:
		}
	}
	return nil
}

// logTails logs the end of every daemon's log: why a cluster misbehaved is nearly always there.
func (c *Cluster) logTails(t testing.TB) {
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		t.Logf("cephtest: last lines of %s:\n%s", filepath.Base(f), bytes.Join(lines, []byte("\n")))
	}
}
