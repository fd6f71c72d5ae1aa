// Package lvm runs lvm2 for the agent: every command through the one `lvm` binary with
// JSON reports, a deadline per command (the process group is killed when it passes), one
// command sequence at a time per volume group (Lock), and failures classified (errors.go)
// so callers never pass lvm's text to a client.
package lvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// MetadataOnlyConfig is the lvm configuration of metadata-only mode: lvm changes only the
// volume group metadata and never asks device-mapper to activate anything, which is how
// volumes are managed on a kernel without device-mapper.
const MetadataOnlyConfig = "global { activation = 0 }"

// DefaultTimeout bounds one lvm command when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Options configure a Runner.
type Options struct {
	// Binary is the lvm executable; default "lvm" (found on PATH).
	Binary string
	// MetadataOnly passes MetadataOnlyConfig to every command.
	MetadataOnly bool
	// Timeout bounds each command; default DefaultTimeout.
	Timeout time.Duration
	// Env is the environment of every command (e.g. os.Environ(), so LVM_SYSTEM_DIR applies);
	// LC_ALL=C and LVM_SUPPRESS_FD_WARNINGS=1 are added.
	Env []string
	// Logger receives one debug line per command.
	Logger *slog.Logger
	// Observe, when set, is told each command's subcommand, outcome ("ok" or the failure
	// kind) and duration: the agent's latency histogram.
	Observe func(command, outcome string, d time.Duration)
}

// Runner runs lvm commands. It is safe for concurrent use.
type Runner struct {
	o      Options
	tracer trace.Tracer

	mu    sync.Mutex
	locks map[string]chan struct{}
}

// New returns a Runner.
func New(o Options) *Runner {
	if o.Binary == "" {
		o.Binary = "lvm"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{o: o, tracer: otel.Tracer("github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"), locks: map[string]chan struct{}{}}
}

// MetadataOnly reports whether commands run in metadata-only mode.
func (r *Runner) MetadataOnly() bool { return r.o.MetadataOnly }

// Lock serialises work on one volume group inside this process: a caller checks free space
// and creates a volume under one Lock, so two creates never race for the same extents.
// It waits until the group is free or ctx ends.
func (r *Runner) Lock(ctx context.Context, vg string) (unlock func(), err error) {
	r.mu.Lock()
	ch, ok := r.locks[vg]
	if !ok {
		ch = make(chan struct{}, 1)
		r.locks[vg] = ch
	}
	r.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// limits on what a command may print before the agent stops keeping it.
const (
	maxStdout = maxReport + 1
	maxStderr = 64 << 10
)

// run executes `lvm sub args...` and returns its standard output.
func (r *Runner) run(ctx context.Context, sub string, args ...string) (_ []byte, err error) {
	ctx, span := r.tracer.Start(ctx, "lvm "+sub, trace.WithAttributes(attribute.String("lvm.command", sub)))
	start := time.Now()
	defer func() {
		outcome := "ok"
		if err != nil {
			outcome = "failed"
			var le *Error
			if errors.As(err, &le) {
				outcome = kindName(le.Kind)
			}
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
		if r.o.Observe != nil {
			r.o.Observe(sub, outcome, time.Since(start))
		}
		r.o.Logger.DebugContext(ctx, "lvm", "command", sub, "outcome", outcome, "duration", time.Since(start))
	}()

	cmdCtx, cancel := context.WithTimeoutCause(ctx, r.o.Timeout, errCommandDeadline)
	defer cancel()
	argv := append([]string{sub}, args...)
	if r.o.MetadataOnly {
		argv = append(argv, "--config", MetadataOnlyConfig)
	}
	cmd := exec.CommandContext(cmdCtx, r.o.Binary, argv...)
	cmd.Env = append(append([]string(nil), r.o.Env...), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	stdout, stderr := &boundedBuffer{max: maxStdout}, &boundedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so a deadline stops lvm and anything it started; SIGTERM
	// first (lvm finishes a metadata commit it is in), SIGKILL after WaitDelay.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run() // Run always waits: no zombie is left behind
	if runErr == nil {
		if stdout.truncated {
			return nil, &Error{Kind: ErrFailed, Command: sub, Detail: "output exceeded the report size limit"}
		}
		return stdout.Bytes(), nil
	}
	code := -1
	var exitErr *exec.ExitError
	if errors.As(runErr, &exitErr) {
		code = exitErr.ExitCode()
	}
	switch {
	case ctx.Err() != nil: // the caller gave up; lvm was stopped
		return nil, fmt.Errorf("lvm %s: %w", sub, ctx.Err())
	case context.Cause(cmdCtx) == errCommandDeadline:
		return nil, &Error{Kind: ErrTimeout, Command: sub, ExitCode: code, Detail: fmt.Sprintf("killed after %v", r.o.Timeout)}
	case exitErr == nil: // lvm could not be started
		return nil, &Error{Kind: ErrFailed, Command: sub, ExitCode: code, Detail: runErr.Error()}
	}
	return nil, &Error{Kind: classify(stderr.String()), Command: sub, ExitCode: code, Detail: detail(stderr.String())}
}

// errCommandDeadline tells a command's own deadline from the caller's cancellation.
var errCommandDeadline = errors.New("lvm command deadline")

func kindName(k error) string {
	switch k {
	case ErrNoSpace:
		return "no_space"
	case ErrLVNotFound:
		return "lv_not_found"
	case ErrVGNotFound:
		return "vg_not_found"
	case ErrExists:
		return "exists"
	case ErrInvalid:
		return "invalid"
	case ErrTimeout:
		return "timeout"
	}
	return "failed"
}

// boundedBuffer keeps at most max bytes and notes that it dropped the rest; the command
// never blocks on a full pipe.
type boundedBuffer struct {
	bytes.Buffer
	max       int
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
