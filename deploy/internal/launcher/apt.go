package launcher

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// aptGet is the one place the launcher installs Debian packages: one apt-get call for all
// that is missing, its output on the console's apt pane. A fresh machine has empty package
// lists, so the first failed install refreshes them (apt-get update) and retries, once per run.
type aptGet struct {
	out     io.Writer
	mu      sync.Mutex // one apt-get at a time: dpkg holds a lock anyway
	updated bool
}

// install installs pkgs with one apt-get call (after an update and a second call when the
// first fails).
func (a *aptGet) install(ctx context.Context, pkgs ...string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	args := append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)
	err := a.run(ctx, args...)
	if err == nil || a.updated {
		return err
	}
	a.updated = true
	if updErr := a.run(ctx, "update"); updErr != nil {
		return fmt.Errorf("%w; then %v", err, updErr)
	}
	return a.run(ctx, args...)
}

func (a *aptGet) run(ctx context.Context, args ...string) error {
	// Another apt-get or dpkg (unattended upgrades, a launcher's -run beside this one) holds
	// dpkg's lock for a while: wait for it rather than fail at once. A stopping launcher lets
	// apt-get finish: killing dpkg halfway leaves the machine's packages half configured.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get %s failed (%v): its output is in the apt lines above", args[0], err)
	}
	return nil
}
