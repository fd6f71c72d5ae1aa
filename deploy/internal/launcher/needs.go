package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// sbinDirs are where Debian keeps administration commands (lvm, losetup, ip): a non-login
// root shell's PATH may lack them.
func sbinDirs() []string { return []string{"/usr/sbin", "/sbin"} }

// SbinPath returns path with /usr/sbin and /sbin appended when missing, so the launcher and
// the services it starts find the commands it checked for (lvmd-agent runs lvm from PATH).
func SbinPath(path string) string {
	dirs := filepath.SplitList(path)
	for _, d := range sbinDirs() {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

// lookCommand finds a Need's command: an absolute path must exist (an executable file, or a
// directory); a name is looked up on PATH, then in /usr/sbin and /sbin.
func lookCommand(cmd string) (string, error) {
	if filepath.IsAbs(cmd) {
		fi, err := os.Stat(cmd)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() && fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%s is not executable", cmd)
		}
		return cmd, nil
	}
	if p, err := exec.LookPath(cmd); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs() {
		p := filepath.Join(d, cmd)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH, in /usr/sbin or in /sbin", cmd)
}

// machine is what settling needs asks of this machine; tests give it fakes.
type machine struct {
	// look finds a command (lookCommand).
	look func(cmd string) (string, error)
	// install installs Debian packages in one call; nil when the launcher may not install,
	// and noInstall then says why.
	install   func(ctx context.Context, pkgs ...string) error
	noInstall string
}

// notRoot is why a user that is not root gets no packages installed.
const notRoot = "not root"

// thisMachine installs with apt as root on a system that has apt-get, unless c.NoInstall.
func thisMachine(c Config, euid int, apt *aptGet) machine {
	m := machine{look: lookCommand}
	if c.NoInstall {
		m.noInstall = "-no-install"
	} else if euid != 0 {
		m.noInstall = notRoot
	} else if _, err := lookCommand("apt-get"); err != nil {
		m.noInstall = "no apt-get here"
	} else {
		m.install = apt.install
	}
	return m
}

// unmet is a need of one binary (or of the private Postgres) that the machine lacks.
type unmet struct {
	binary string
	// optional is the binary's Spec.Optional: it is skipped without the need.
	optional string
	need     Need
	// present, when set, checks the need instead of looking up need.Command.
	present func() bool
}

func (u unmet) met(m machine) bool {
	if u.present != nil {
		return u.present()
	}
	_, err := m.look(u.need.Command)
	return err == nil
}

// unmetNeeds lists, in table order, what specs need under c that the machine lacks.
func unmetNeeds(specs []Spec, c Config, m machine) []unmet {
	var missing []unmet
	for _, s := range specs {
		if s.Needs == nil {
			continue
		}
		for _, n := range s.Needs(c) {
			if u := (unmet{binary: s.Binary, optional: s.Optional, need: n}); !u.met(m) {
				missing = append(missing, u)
			}
		}
	}
	return missing
}

// settleNeeds deals with everything missing at once, before anything starts: when it may,
// it installs every missing package in one apt-get call (one line each saying for whom);
// otherwise it says exactly what to install. What is still missing then skips an Optional
// binary (its reason in the map), leaves a binary that runs without it with a warning, and
// is otherwise an error naming it.
func settleNeeds(ctx context.Context, missing []unmet, m machine, say func(string, ...any)) (map[string]error, error) {
	if len(missing) == 0 {
		return nil, nil
	}
	pkgs := packagesOf(missing)
	var installErr error
	if m.install != nil {
		for _, pkg := range pkgs {
			say("installing %s for %s: apt-get install -y %s", pkg, whoNeeds(missing, pkg), pkg)
		}
		installErr = m.install(ctx, pkgs...)
		if ctx.Err() != nil {
			return nil, ctx.Err() // stopped meanwhile
		}
		if installErr != nil {
			say("installing %s failed: %v", strings.Join(pkgs, " "), installErr)
		}
		missing = slices.DeleteFunc(missing, func(u unmet) bool { return u.met(m) })
	} else {
		for _, u := range missing {
			say("%s needs %s (Debian package %s): apt-get install %s", u.binary, u.need.Command, u.need.Package, u.need.Package)
		}
		hint := ""
		if m.noInstall == notRoot {
			hint = "; as root, make up installs it"
		}
		say("not installing (%s): apt-get install %s brings everything%s", m.noInstall, strings.Join(pkgs, " "), hint)
	}
	skip := map[string]error{}
	var errs []error
	// One line per binary and consequence: "stats runs without ceph-mon, radosgw: …".
	type lack struct{ binary, without string }
	var lacking []lack
	lacks := map[lack][]string{}
	for _, u := range missing {
		n := u.need
		switch {
		case n.Without != "":
			l := lack{u.binary, n.Without}
			if lacks[l] == nil {
				lacking = append(lacking, l)
			}
			lacks[l] = append(lacks[l], n.Command)
		case u.optional != "":
			if skip[u.binary] == nil {
				skip[u.binary] = fmt.Errorf("%w: %s is missing (apt-get install %s); %s", ErrSkip, n.Command, n.Package, u.optional)
			}
		default:
			hint := "apt-get install " + n.Package
			if installErr != nil {
				hint = "apt-get could not install it, see above"
			} else if m.install != nil {
				hint = "apt-get installed " + n.Package + " but it is still missing"
			}
			errs = append(errs, fmt.Errorf("%s needs %s (Debian package %s) for %s: %s", u.binary, n.Command, n.Package, n.Why, hint))
		}
	}
	for _, l := range lacking {
		say("%s runs without %s: %s", l.binary, strings.Join(lacks[l], ", "), l.without)
	}
	return skip, errors.Join(errs...)
}

// packagesOf lists the packages of the missing needs once each, in order.
func packagesOf(missing []unmet) []string {
	var pkgs []string
	for _, u := range missing {
		if !slices.Contains(pkgs, u.need.Package) {
			pkgs = append(pkgs, u.need.Package)
		}
	}
	return pkgs
}

// whoNeeds says which binaries need pkg and what for: "lvmd-agent (loop-backed volume group)".
func whoNeeds(missing []unmet, pkg string) string {
	var who []string
	for _, u := range missing {
		if u.need.Package != pkg {
			continue
		}
		w := u.binary
		if u.need.Why != "" {
			w += " (" + u.need.Why + ")"
		}
		if !slices.Contains(who, w) {
			who = append(who, w)
		}
	}
	return strings.Join(who, ", ")
}

// foundSpecs are the table's specs of the binaries found under services/.
func foundSpecs(found []Binary) []Spec {
	return slices.DeleteFunc(Table(), func(s Spec) bool {
		return !slices.ContainsFunc(found, func(b Binary) bool { return b.Name == s.Binary })
	})
}

// runnerNeeds are ip, runc and tini for the runner's netns machines (kaas's clusters): their
// network, their sandbox and its init; the runner starts without them, and those machines
// fail saying so.
func runnerNeeds(Config) []Need {
	without := "netns machines (kaas's clusters) cannot be made"
	return []Need{{Command: "ip", Package: "iproute2", Why: "netns machines", Without: without},
		{Command: "runc", Package: "runc", Why: "netns machines' sandbox", Without: without},
		{Command: "tini", Package: "tini", Why: "netns machines' init", Without: without}}
}
