// Package kernelvm runs a command inside a QEMU virtual machine booted with Debian's kernel
// on the host's own root file system, so tests that need device-mapper (LVM activation, thin
// pools, snapshots, mounts) run for real on a host whose kernel lacks it.
//
// The guest shares the host's root read-only over virtio-9p with a tmpfs overlay on top: it
// runs the host's programs and freshly built test binaries at their own paths, and whatever
// it writes is gone at power-off. The kernel package is downloaded and the guest prepared
// once per kernel version, under the user's cache directory (DefaultCacheDir). RunTestInGuest
// runs the calling test itself in the guest when the host has no device-mapper.
package kernelvm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnavailable marks an error saying that a guest cannot be had on this machine: a program
// or the kernel package is missing. Tests skip on it (or fail when strict); every other
// error is a failure.
var ErrUnavailable = errors.New("kernelvm: a guest cannot run here")

// GuestEnv is the environment variable the guest sets to "1" for the command: InGuest
// reports it.
const GuestEnv = "PLINTH_KERNELVM_GUEST"

// DefaultMemoryMiB is the guest's memory unless Options.MemoryMiB says otherwise.
const DefaultMemoryMiB = 2048

// Options says what Run runs in the guest.
type Options struct {
	// Command is the program and its arguments, run in the guest as on the host: a name
	// without a slash is looked up on the PATH of Env.
	Command []string
	// Env is the command's environment, KEY=VALUE, as exec.Cmd's. The guest adds
	// DM_DISABLE_UDEV=1 (it runs no udev: LVM makes its device nodes itself), GuestEnv=1,
	// and a PATH with the sbin directories when Env has none.
	Env []string
	// Dir is the command's working directory, a host path (the guest sees the host's
	// files at their own paths); "" is /.
	Dir string
	// ForwardPorts are TCP ports on the host's 127.0.0.1 that the command reaches on the
	// guest's 127.0.0.1 at the same numbers, each connection relayed on its own: URLs,
	// passfile entries and S3 endpoints naming 127.0.0.1 work unchanged in the guest.
	ForwardPorts []int
	// MemoryMiB is the guest's memory; 0 is DefaultMemoryMiB. Its /tmp and every file it
	// writes outside the results live in it.
	MemoryMiB int
	// CacheDir holds the prepared guests; "" is DefaultCacheDir().
	CacheDir string
	// Log receives, as they come, the lines of the guest's console: this package's progress,
	// the kernel's messages and the command's output. nil discards them. Run returns only
	// after its last call.
	Log func(line string)
}

// Result is what the command did in the guest.
type Result struct {
	// Output is the command's standard output and standard error, interleaved as written.
	Output string
	// ExitCode is the command's exit status (127: not found, 125: Dir missing).
	ExitCode int
	// Boot is the time from starting QEMU to starting the command.
	Boot time.Duration
	// Elapsed is the time from starting QEMU to its exit.
	Elapsed time.Duration
	// Kernel is the guest's kernel release, e.g. 6.1.0-57-amd64.
	Kernel string
}

// Run boots a guest, runs o.Command in it and returns its output and exit status once the
// guest has powered off. A command that fails is a Result with a non-zero ExitCode, not an
// error; an error means the command's status could not be had (the guest could not be
// prepared or booted, or ctx ended: QEMU is then killed). Errors that mean "not on this
// machine" wrap ErrUnavailable.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	// What running needs is looked for first: without QEMU, preparing would be wasted.
	progs, err := lookAll(o.programs()...)
	if err != nil {
		return Result{}, err
	}
	g, err := prepare(ctx, o.CacheDir, o.logf)
	if err != nil {
		return Result{}, err
	}
	return g.run(ctx, o, progs)
}

func (o Options) validate() error {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return errors.New("kernelvm: Options.Command is empty")
	}
	for _, w := range append(append([]string{o.Dir}, o.Command...), o.Env...) {
		if strings.ContainsRune(w, 0) {
			return errors.New("kernelvm: a NUL byte in Options.Command, Env or Dir")
		}
	}
	if strings.Contains(o.Command[0], "=") {
		return fmt.Errorf("kernelvm: the program %q has a '=' in its name", o.Command[0])
	}
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("kernelvm: Options.Env entry %q is not KEY=VALUE", kv)
		}
	}
	seen := map[int]bool{}
	for _, p := range o.ForwardPorts {
		if p < 1 || p > 65535 || seen[p] {
			return fmt.Errorf("kernelvm: forwarded port %d is out of range or repeated", p)
		}
		seen[p] = true
	}
	if o.MemoryMiB < 0 {
		return fmt.Errorf("kernelvm: MemoryMiB %d is negative", o.MemoryMiB)
	}
	return nil
}

// logf sends one line to o.Log, if any.
func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(fmt.Sprintf(format, args...))
	}
}
