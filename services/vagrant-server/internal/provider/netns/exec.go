package netns

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// defaultPath is the PATH a command gets when its environment has none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// pipeGrace is how long output is still read after the command exits: a background process it
// started may hold the pipes open forever.
const pipeGrace = 2 * time.Second

// Exec runs cmd inside running machine id with `ip netns exec`, in its own process group, and
// returns the exit status.
func (p *Provider) Exec(ctx context.Context, id string, c provider.Command) (int, error) {
	if len(c.Args) == 0 {
		return -1, errors.New("no command to run")
	}
	st, err := p.Status(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			// Canceled before the command started: the cancel's cause, not the status
			// command it cut short ("runc state: signal: killed").
			return -1, context.Cause(ctx)
		}
		return -1, err
	}
	if st.ID != provider.StateRunning {
		return -1, fmt.Errorf("%w (it is %s)", provider.ErrNotRunning, st.Short)
	}
	if p.sb != nil {
		return p.execSandboxed(ctx, id, c)
	}
	cmd := exec.Command(p.o.IP, append([]string{"netns", "exec", p.Namespace(id)}, c.Args...)...)
	cmd.Env = withPath(c.Env)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start %s in %s: %w", c.Args[0], p.Namespace(id), err)
	}
	exited := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = p.stopGroup(ctx, cmd.Process.Pid, exited) })
	err = cmd.Wait()
	close(exited)
	if !stop() {
		// Canceled: whatever the command left running goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	code := exitCode(cmd)
	if ctx.Err() != nil {
		return code, context.Cause(ctx)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return code, err
	}
	return code, nil
}

// stopGroup ends process group pgid on cancel: SIGKILL at once for a forced cancel, else
// SIGTERM and SIGKILL after the grace period unless the leader exited. It returns the last
// signal sent.
func (p *Provider) stopGroup(ctx context.Context, pgid int, exited <-chan struct{}) syscall.Signal {
	if errors.Is(context.Cause(ctx), provider.ErrKilled) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return syscall.SIGKILL
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(p.o.StopGrace)
	defer t.Stop()
	select {
	case <-exited:
		return syscall.SIGTERM
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return syscall.SIGKILL
	}
}

// exitCode is the process's exit status, 128+N when signal N killed it, -1 if unknown.
func exitCode(cmd *exec.Cmd) int {
	ps := cmd.ProcessState
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// withPath adds a PATH to env when it has none: `ip netns exec` looks the program up there.
func withPath(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return env
		}
	}
	return append([]string{defaultPath}, env...)
}

// stopProcesses ends every process in namespace ns: SIGTERM, then SIGKILL after the grace
// period, and waits until they are gone. Each process gets each signal once.
func (p *Provider) stopProcesses(ctx context.Context, ns string) error {
	deadline := time.Now().Add(p.o.StopGrace)
	sig := syscall.SIGTERM
	sent := map[int]syscall.Signal{}
	for {
		pids, err := p.pids(ctx, ns)
		if err != nil || len(pids) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			if sig == syscall.SIGKILL {
				return fmt.Errorf("processes %v in %s survive SIGKILL", pids, ns)
			}
			sig, deadline = syscall.SIGKILL, time.Now().Add(5*time.Second)
		}
		for _, pid := range pids {
			if sent[pid] != sig {
				_ = syscall.Kill(pid, sig)
				sent[pid] = sig
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pids lists the processes in namespace ns.
func (p *Provider) pids(ctx context.Context, ns string) ([]int, error) {
	out, err := p.ip(ctx, "netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
