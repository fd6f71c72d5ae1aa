package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// builds makes the suite's binaries the tests run as processes — auth (every kaas call's
// token is checked there), vagrant-server, vagrant-runner and kaas itself (to kill it with
// SIGKILL) — each once per test binary, when a test first needs it, with the workspace's go.
var builds = struct {
	mu   sync.Mutex
	dir  string
	once map[string]*sync.Once
	errs map[string]error
}{once: map[string]*sync.Once{}, errs: map[string]error{}}

var packages = map[string]string{
	"auth":           "github.com/plinth-dev/plinth/services/auth/cmd/auth",
	"vagrant-server": "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-server",
	"vagrant-runner": "github.com/plinth-dev/plinth/services/vagrant-server/cmd/vagrant-runner",
	"kaas":           "github.com/plinth-dev/plinth/services/kaas/cmd/kaas",
}

func binary(t testing.TB, name string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.dir == "" {
		// One directory for every run: binaries are replaced by rename, so runs side by side
		// never see a half-written one, and nothing piles up in the temp directory.
		builds.dir = filepath.Join(os.TempDir(), "plinth-kaas-test-bin")
		if err := os.MkdirAll(builds.dir, 0o755); err != nil {
			builds.mu.Unlock()
			t.Fatal(err)
		}
	}
	once := builds.once[name]
	if once == nil {
		once = &sync.Once{}
		builds.once[name] = once
	}
	dir := builds.dir
	builds.mu.Unlock()
	once.Do(func() {
		tmp := filepath.Join(dir, fmt.Sprintf("%s.tmp-%d", name, os.Getpid()))
		out, err := exec.Command("go", "build", "-o", tmp, packages[name]).CombinedOutput()
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, name))
		}
		if err != nil {
			_ = os.Remove(tmp)
			builds.mu.Lock()
			builds.errs[name] = fmt.Errorf("go build %s: %v\n%s", packages[name], err, out)
			builds.mu.Unlock()
		}
	})
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if err := builds.errs[name]; err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
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
