package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// packages are the suite's binaries the tests run as processes — auth (every kaas call's
// token is checked there), vagrant-server, vagrant-runner and kaas itself (to kill it with
// SIGKILL) — each built once per test binary, when a test first needs it.
var packages = map[string]string{
	"auth":           "github.com/plinth-dev/plinth/services/auth/cmd/auth",
	"vagrant-server": "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-server",
	"vagrant-runner": "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-runner",
	"kaas":           "github.com/plinth-dev/plinth/services/kaas/cmd/kaas",
}

func binary(t testing.TB, name string) string {
	t.Helper()
	return testenv.Binary(t, packages[name])
}

// proc is a binary running for a test.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *testenv.SyncBuffer
	addr chan string
	done chan struct{}
}

// startProc runs binary name with environ (JSON logs) and returns once it logged "serving"
// (servesGRPC) or at once. Its output is kept and shown when the test fails; it is stopped
// (SIGTERM) when the test ends.
func startProc(t testing.TB, name string, environ []string, servesGRPC bool) *proc {
	t.Helper()
	p := &proc{name: name, logs: &testenv.SyncBuffer{}, addr: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.Command(binary(t, name))
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug"}, environ...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.logs.Write([]byte(line + "\n"))
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"grpc_addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" && rec.Addr != "" {
				select {
				case p.addr <- rec.Addr:
				default:
				}
			}
		}
	}()
	go func() { _ = p.cmd.Wait(); pw.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("%s output (last 4 KiB):\n%s", name, last(p.logs.String(), 4096))
		}
	})
	if servesGRPC {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", name, last(p.logs.String(), 4096))
		case a := <-p.addr:
			p.addr <- a
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not start serving: %s", name, last(p.logs.String(), 4096))
		}
	}
	return p
}

// Addr is the gRPC address the process serves on.
func (p *proc) Addr() string { a := <-p.addr; p.addr <- a; return a }

// stop signals the process (its group) and waits for it.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func last(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ctxT is a context bounded by d that ends with the test.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
