package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process whose output goes to a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan error
	log  string
}

func startProc(name, bin, logPath string, env []string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1), log: logPath}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	return p, nil
}

// stop sends SIGTERM and waits; after timeout it kills.
func (p *proc) stop(timeout time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports a process that ended on its own.
func (p *proc) exited() error {
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited (%v); see %s", p.name, err, p.log)
	default:
		return nil
	}
}

// cpuTicks is the user+system CPU time of pid in clock ticks (1/100 s on Linux).
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields start after its closing parenthesis.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// childrenOf lists the pids whose parent is ppid (Postgres backends of the postmaster).
func childrenOf(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			s = s[i+2:]
		}
		f := strings.Fields(s)
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// cpuSnapshot is CPU ticks per process group at one moment.
type cpuSnapshot struct {
	server, runners, postgres, self int64
}

func (m *measurement) cpu() cpuSnapshot {
	var s cpuSnapshot
	s.server = cpuTicks(m.server.cmd.Process.Pid)
	for _, r := range m.runners {
		s.runners += cpuTicks(r.cmd.Process.Pid)
	}
	if pm := m.env.postmaster(); pm != 0 {
		s.postgres = cpuTicks(pm)
		for _, c := range childrenOf(pm) {
			s.postgres += cpuTicks(c)
		}
	}
	s.self = cpuTicks(os.Getpid())
	return s
}
