package cephlocal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon is one Ceph daemon running in the foreground as a child of this process.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
	err  error         // Wait's result, read after done
}

// stopOrder stops the clients of the cluster first and the mon last, so the others can still
// report to it while they shut down.
var stopOrder = []string{"client.rgw.x", "osd.0", "mgr.x", "mon.a"}

// startDaemon runs program in the foreground (-f: no fork) in its own process group, with
// SIGTERM when this process dies, so nothing outlives a killed parent for long (the radosgw
// gives up on its stopped mon after up to 2 minutes). Only Stop saves the memstore: on the
// parent's death every daemon is signalled at once, and an OSD whose mon stops with it exits
// without writing its store (seen: objects written since the start were gone). The pid goes
// to run/<name>.pid, for stopStale.
func (c *Cluster) startDaemon(name, program string, args ...string) error {
	out, err := os.OpenFile(filepath.Join(c.dir, "log", name+".stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(program, append([]string{"-f", "-c", c.conf}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		_ = out.Close()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	return os.WriteFile(c.pidFile(name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

func (c *Cluster) pidFile(name string) string { return filepath.Join(c.dir, "run", name+".pid") }

// stop ends the daemon: SIGTERM to its group, SIGKILL after grace (at once with grace 0).
// It reports whether the daemon stopped on its own.
func (d *daemon) stop(grace time.Duration) bool {
	sig := syscall.SIGTERM
	if grace == 0 {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, sig)
	select {
	case <-d.done:
		return sig == syscall.SIGTERM
	case <-time.After(grace):
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
	}
	return false
}

// stopDaemons stops every daemon in stopOrder, then removes the pid files. It returns an error
// naming the daemons that had to be killed.
func (c *Cluster) stopDaemons(grace time.Duration) error {
	var killed []string
	for _, name := range stopOrder {
		for _, d := range c.daemons {
			if d.name == name && !d.stop(grace) && grace > 0 {
				killed = append(killed, name)
			}
		}
		_ = os.Remove(c.pidFile(name))
	}
	c.daemons = nil
	if len(killed) > 0 {
		return fmt.Errorf("cephlocal: %s did not stop within %v and were killed (memstore data written since their start is lost)",
			strings.Join(killed, ", "), grace)
	}
	return nil
}

// exitedDaemon reports a daemon that ended while the cluster should be running.
func (c *Cluster) exitedDaemon() error {
	for _, d := range c.daemons {
		select {
		case <-d.done:
			return fmt.Errorf("%s exited: %v%s", d.name, d.err, c.logTail(d.name, 5))
		default:
		}
	}
	return nil
}

// stopStale stops daemons a parent that died left running on this directory (their pid files
// name them; only a process whose command line names this cluster's ceph.conf is signalled),
// gracefully, so the OSD saves its store.
func stopStale(dir, conf string) error {
	for _, name := range stopOrder {
		path := filepath.Join(dir, "run", name+".pid")
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid > 0 && runsConf(pid, conf) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			if !waitGone(pid, conf, 30*time.Second) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				if !waitGone(pid, conf, 10*time.Second) {
					return fmt.Errorf("cephlocal: %s (pid %d) from an earlier run does not stop", name, pid)
				}
			}
		}
		_ = os.Remove(path)
	}
	return nil
}

// runsConf reports whether pid is alive (not a zombie) with conf on its command line.
func runsConf(pid int, conf string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(conf)) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !bytes.Contains(stat, []byte(") Z "))
}

func waitGone(pid int, conf string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !runsConf(pid, conf) {
			return true
		}
	}
	return false
}

// rssBytes is the resident memory of pid, from /proc (0 when unknown).
func rssBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// logTail is the end of a daemon's log (its own log file, else its stderr), for errors.
func (c *Cluster) logTail(name string, n int) string {
	for _, f := range []string{"ceph-" + name + ".log", name + ".stderr"} {
		data, err := os.ReadFile(filepath.Join(c.dir, "log", f))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		return "; last lines of log/" + f + ":\n" + string(bytes.Join(lines, []byte("\n")))
	}
	return ""
}
