package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/provider"
)

// statusWrapper runs the command (through env, so a shell builtin name is a program too)
// with the status pipe closed for it and what it leaves behind, and writes its exit status
// there. The command cannot forge it: it never holds the pipe.
const statusWrapper = `/usr/bin/env -- "$@" 3>&-; echo $? >&3`

// execSandboxed runs c in machine id's container. runc exec is detached: attached, runc
// copies the output itself and does not return while a process the command left in the
// background holds it, however long. Detached, the process writes straight into the pipes
// here, the exit status comes back on a pipe of its own (statusWrapper), and output is
// read for pipeGrace after it, as Exec does without a sandbox.
func (p *Provider) execSandboxed(ctx context.Context, id string, c provider.Command) (int, error) {
	ns := p.Namespace(id)
	bundle := p.sb.bundle(ns)
	tag := make([]byte, 6)
	_, _ = rand.Read(tag)
	procFile := filepath.Join(bundle, "exec-"+hex.EncodeToString(tag)+".json")
	pidFile := strings.TrimSuffix(procFile, ".json") + ".pid"
	defer os.Remove(procFile)
	defer os.Remove(pidFile)
	proc := ociProcess{
		Args: append([]string{"/bin/sh", "-c", statusWrapper, "sh"}, c.Args...),
		// The job's environment may hold its secrets: the file is the runner's alone (0600 in
		// a root-owned bundle) and removed once runc has read it.
		Env: withPath(c.Env), Cwd: "/", Capabilities: p.sb.capabilities(), NoNewPrivileges: true,
	}
	b, err := json.Marshal(proc)
	if err != nil {
		return -1, err
	}
	if err := os.WriteFile(procFile, b, 0o600); err != nil {
		return -1, fmt.Errorf("exec in %s: %w", ns, err)
	}
	status, out, errOut, closeAll, err := execPipes()
	if err != nil {
		return -1, err
	}
	defer closeAll()
	copied := &sync.WaitGroup{}
	for _, cp := range []struct {
		w io.Writer
		r *os.File
	}{{c.Stdout, out[0]}, {c.Stderr, errOut[0]}} {
		copied.Add(1)
		go func() { defer copied.Done(); _, _ = io.Copy(orDiscard(cp.w), cp.r) }()
	}
	// Starting is not canceled half-way (a killed runc leaves its half-made process behind):
	// a cancel that came meanwhile stops the started command below, at once.
	startCtx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	var pid int
	_, err = p.runcExec(startCtx, ns, procFile, pidFile, out[1], errOut[1], status[1])
	cancelStart()
	// Only the machine's process holds the write ends now: EOF means it is gone.
	for _, f := range []*os.File{out[1], errOut[1], status[1]} {
		_ = f.Close()
	}
	if err == nil {
		pid, err = readPid(pidFile)
	}
	if err != nil {
		// Nothing holds the write ends: the copies end at once, before c's writers go back.
		waitPipes(copied, closeAll)
		return -1, fmt.Errorf("start %s in %s: %w", c.Args[0], ns, err)
	}
	exited := make(chan struct{})
	var got []byte
	go func() { got, _ = io.ReadAll(status[0]); close(exited) }()
	sentC := make(chan syscall.Signal, 1)
	stop := context.AfterFunc(ctx, func() { sentC <- p.stopGroup(ctx, pid, exited) })
	<-exited
	var sent syscall.Signal
	if !stop() {
		sent = <-sentC
		// Canceled: whatever the command left running goes too.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	waitPipes(copied, closeAll)
	code, parseErr := strconv.Atoi(strings.TrimSpace(string(got)))
	if ctx.Err() != nil {
		if parseErr != nil {
			code = 128 + int(sent)
		}
		return code, context.Cause(ctx)
	}
	if parseErr != nil {
		return -1, fmt.Errorf("%s in %s ended without an exit status (its wrapper was killed)", c.Args[0], ns)
	}
	return code, nil
}

// runcExec starts the process described in procFile in container ns, detached, with the
// given standard output, standard error and status pipe (fd 3).
func (p *Provider) runcExec(ctx context.Context, ns, procFile, pidFile string, stdout, stderr, status *os.File) ([]byte, error) {
	return p.runcWith(ctx, ns, func(cmd *cmdFiles) {
		cmd.stdout, cmd.stderr, cmd.extra = stdout, stderr, []*os.File{status}
	}, "exec", "--detach", "--pid-file", pidFile, "--preserve-fds", "1", "--process", procFile, ns)
}

// execPipes makes the status, stdout and stderr pipes ([0] read, [1] write) and a function
// that closes them all (closing twice is harmless).
func execPipes() (status, out, errOut [2]*os.File, closeAll func(), err error) {
	var files []*os.File
	closeAll = func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	for _, pp := range []*[2]*os.File{&status, &out, &errOut} {
		r, w, perr := os.Pipe()
		if perr != nil {
			closeAll()
			return status, out, errOut, nil, perr
		}
		pp[0], pp[1] = r, w
		files = append(files, r, w)
	}
	return status, out, errOut, closeAll, nil
}

// waitPipes lets the output copies finish for pipeGrace, then cuts them: a background
// process may hold the pipes open forever.
func waitPipes(copied *sync.WaitGroup, closeAll func()) {
	done := make(chan struct{})
	go func() { copied.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		closeAll()
		<-done
	}
}

// readPid reads the host pid runc wrote for the process it started.
func readPid(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("runc exec pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, errors.New("runc exec wrote no pid")
	}
	return pid, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
