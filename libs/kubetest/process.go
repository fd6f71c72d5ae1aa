package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// stopGrace is how long a component gets to exit after SIGTERM before it is killed. The
// apiserver drains for a few seconds by default; tests should not wait for it much longer.
const stopGrace = 10 * time.Second

// process is one control-plane component running as a child of the test binary, its output
// in a log file that is shown when the test fails.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // cmd.Wait's result; read only after done is closed
}

// startProcess runs path with args, output to logPath. The child gets its own process group
// (so stop reaches anything it forks) and SIGKILL when the test binary dies — a test killed
// by -timeout never runs its cleanups, and must not leave an apiserver behind.
func startProcess(name, logPath, path string, args ...string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: log file: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, with why.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, fmt.Errorf("%s exited", p.name)
		}
		return true, fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	default:
		return false, nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after stopGrace. Safe to call twice.
func (p *process) stop() {
	if done, _ := p.exited(); done {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	// The leader is reaped; anything it left in its group goes too.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

// stopOnCleanup stops p when the test ends and, if the test failed, logs the end of p's
// output: the reason a control plane misbehaved is nearly always there.
func (p *process) stopOnCleanup(t testing.TB) {
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("kubetest: last lines of %s's log (%s):\n%s", p.name, p.logPath, p.logTail(40))
		}
	})
}

// logTail returns the last n lines of the process's output.
func (p *process) logTail(n int) string { return kube.Tail(p.logPath, n) }

// errPortTaken marks a start that failed because another process bound the port between our
// check and the component's bind; the caller retries with other ports.
var errPortTaken = errors.New("port taken")

// failure explains why p did not become ready, with its last log lines, and marks a lost
// port race with errPortTaken.
func (p *process) failure(cause error) error {
	tail := p.logTail(15)
	if strings.Contains(tail, "address already in use") {
		cause = fmt.Errorf("%w: %w", errPortTaken, cause)
	}
	return fmt.Errorf("%w; last lines of its log (%s):\n%s", cause, p.logPath, tail)
}
