package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"time"
)

// child is one running service process.
type child struct {
	name string
	cmd  *exec.Cmd
	out  io.Closer
	done chan struct{} // closed when the process has exited and its output is drained
	err  error         // exit error, valid after done
}

// startChild runs path with args and env, its stdout and stderr going to out. The child gets its own
// process group, so a terminal's Ctrl-C reaches only the launcher, which then stops children
// in order; and it gets SIGTERM should the launcher die without cleaning up.
func startChild(name, path string, env []string, dir string, out io.WriteCloser, args ...string) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// A grandchild holding the output pipe open must not block Wait forever.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		_ = out.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// signal sends sig to the child's whole process group.
func (c *child) signal(sig syscall.Signal) {
	// ESRCH only means it is already gone.
	_ = syscall.Kill(-c.pid(), sig)
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// waitReady polls the child's admin /readyz until it answers 200, the child exits, or the
// timeout passes.
func (c *child) waitReady(ctx context.Context, admin string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + admin + "/readyz"
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before it was ready (%v); its output is above", c.name, c.err)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s not ready after %s: %s never answered 200; its output is above", c.name, timeout, url)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopChildren sends SIGTERM to every child (dependents first), waits until they exit or the
// deadline passes or force is closed, then kills what is left. It reports children that had
// to be killed.
func stopChildren(children []*child, timeout time.Duration, force <-chan struct{}, say func(string, ...any)) {
	for i := len(children) - 1; i >= 0; i-- {
		if !children[i].exited() {
			children[i].signal(syscall.SIGTERM)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, c := range children {
		select {
		case <-c.done:
			continue
		case <-deadline.C:
		case <-force:
		}
		break
	}
	for _, c := range children {
		if !c.exited() {
			say("%s did not exit in time: killing it", c.name)
			c.signal(syscall.SIGKILL)
			<-c.done
		}
	}
}
