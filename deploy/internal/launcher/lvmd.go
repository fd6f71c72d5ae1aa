package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrSkip, wrapped in an error from a Spec's Prepare, leaves that binary out of the run: the
// launcher says why in one line and starts the others.
var ErrSkip = errors.New("skipped")

// lvmdDevDir holds the loop-backed volume group `make up` gives lvmd-agent (its backing file
// and lvmd.yaml). It outlives the run: `lvmd-agent dev-vg -dir .plinth/lvm -remove` deletes it.
func lvmdDevDir(home string) string { return filepath.Join(home, "lvm") }

// lvmdEnv points the agent at the development volume group, unless the user configured
// their own.
func lvmdEnv(c Config, _ map[string]Placement) map[string]string {
	if c.LvmdConfig != "" {
		return nil
	}
	return map[string]string{envLvmdConfig: filepath.Join(lvmdDevDir(c.Home), "lvmd.yaml")}
}

// lvmdNeeds is lvm2 for the development volume group; the user's own device classes are
// theirs to provide for.
func lvmdNeeds(c Config) []Need {
	if c.LvmdConfig != "" {
		return nil
	}
	return []Need{{Command: "lvm", Package: "lvm2", Why: "loop-backed volume group"}}
}

// ensureLvmdVG makes (or finds again) the loop-backed development volume group with the
// agent's own dev-vg command. Without root the agent is skipped (without lvm2, settleNeeds
// skipped it before).
func ensureLvmdVG(ctx context.Context, c Config, _ map[string]Placement, say func(string, ...any)) error {
	home := c.Home
	if own := c.LvmdConfig; own != "" {
		say("lvmd-agent: device classes from PLINTH_LVMD_CONFIG=%s", own)
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: lvmd-agent needs root for its loop-backed volume group (run make up as root, or set PLINTH_LVMD_CONFIG to your own lvmd.yaml)", ErrSkip)
	}
	out, err := devVG(ctx, home, c.LvmdVG).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lvmd-agent dev-vg: %w: %s", err, out)
	}
	say("lvmd-agent: %s (kept across runs; remove with: %s)",
		strings.TrimSpace(string(out)), strings.Join(devVG(ctx, home, c.LvmdVG, "-remove").Args, " "))
	return nil
}

// devVG is the agent's dev-vg command for volume group vg under home's lvm directory.
func devVG(ctx context.Context, home, vg string, extra ...string) *exec.Cmd {
	args := append([]string{"dev-vg", "-dir", lvmdDevDir(home), "-vg", vg}, extra...)
	return exec.CommandContext(ctx, filepath.Join(home, "bin", "lvmd-agent"), args...)
}

// RemoveDevVG removes volume group vg that a launcher with this home made for lvmd-agent (its
// loop device and backing file); nothing when the home has none (not root, or no lvm2).
func RemoveDevVG(ctx context.Context, home, vg string) error {
	if _, err := os.Stat(lvmdDevDir(home)); err != nil {
		return nil
	}
	if out, err := devVG(ctx, home, vg, "-remove").CombinedOutput(); err != nil {
		return fmt.Errorf("remove volume group %s: %w: %s", vg, err, out)
	}
	return nil
}
