// Package loopvg makes a volume group on a loop device over a sparse file: the development
// VG `make up` gives the agent when none is configured, and the throw-away VGs of the tests.
// It needs root, lvm2 and util-linux's losetup. In metadata-only mode (no device-mapper)
// nothing is ever activated, so removing the VG never has to deactivate anything.
package loopvg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// Options describe one loop-backed volume group.
type Options struct {
	// File is the backing file (created sparse when missing).
	File string
	// VG is the volume group's name.
	VG string
	// Size is the backing file's size in bytes (only used when the file is created).
	Size int64
	// MetadataOnly runs lvm without activation (see lvm.MetadataOnlyConfig).
	MetadataOnly bool
	// Env is the environment for lvm and losetup; nil means os.Environ().
	Env []string
}

var vgNameRE = regexp.MustCompile(`^[A-Za-z0-9+_.][A-Za-z0-9+_.-]{0,126}$`)

// Ensure makes the volume group exist on File: it creates the file, attaches it to a loop
// device (reusing one already attached to it) and creates the PV and VG when missing. It is
// idempotent, so a restart (or a reboot, which detaches loop devices) finds its VG again.
// It returns the loop device.
func Ensure(ctx context.Context, o Options) (string, error) {
	if !vgNameRE.MatchString(o.VG) {
		return "", fmt.Errorf("loopvg: %q is not a valid volume group name", o.VG)
	}
	if os.Geteuid() != 0 {
		return "", errors.New("loopvg: loop devices and lvm need root")
	}
	if err := os.MkdirAll(filepath.Dir(o.File), 0o700); err != nil {
		return "", fmt.Errorf("loopvg: %w", err)
	}
	if _, err := os.Stat(o.File); errors.Is(err, os.ErrNotExist) {
		if err := createSparse(o.File, o.Size); err != nil {
			return "", err
		}
	}
	dev, err := Attached(ctx, o.File, o.Env)
	if err != nil {
		return "", err
	}
	if dev == "" {
		if dev, err = output(ctx, o.Env, "losetup", "--find", "--show", o.File); err != nil {
			return "", err
		}
	}
	r := lvm.New(lvm.Options{MetadataOnly: o.MetadataOnly, Env: env(o.Env)})
	if _, err := r.VG(ctx, o.VG); err == nil {
		return dev, nil
	} else if !errors.Is(err, lvm.ErrVGNotFound) {
		return "", fmt.Errorf("loopvg: %w", err)
	}
	for _, args := range [][]string{{"pvcreate", "-y", dev}, {"vgcreate", "-y", o.VG, dev}} {
		if _, err := output(ctx, o.Env, "lvm", lvmArgs(o, args)...); err != nil {
			return "", err
		}
	}
	return dev, nil
}

// Remove deletes the volume group (and every volume in it), detaches the loop device and
// deletes the backing file. Missing pieces are skipped, so it also finishes a half-done
// removal.
func Remove(ctx context.Context, o Options) error {
	var errs []error
	dev, err := Attached(ctx, o.File, o.Env)
	if err != nil {
		return err
	}
	if dev != "" {
		if _, err := output(ctx, o.Env, "lvm", lvmArgs(o, []string{"vgremove", "-ff", "-y", o.VG})...); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
		if _, err := output(ctx, o.Env, "lvm", lvmArgs(o, []string{"pvremove", "-ff", "-y", dev})...); err != nil && !strings.Contains(err.Error(), "No PV") {
			errs = append(errs, err)
		}
		if _, err := output(ctx, o.Env, "losetup", "-d", dev); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(o.File); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Attached returns the loop device backed by file, or "" when none is. It asks losetup for
// the devices associated with the file, which it matches by the file's device and inode: the
// path the kernel keeps for a loop device is the one seen where it was attached, so a device
// attached through another path (a container's mount that is gone, a symlink) is found too.
func Attached(ctx context.Context, file string, environ []string) (string, error) {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	out, err := output(ctx, environ, "losetup", "--list", "--json", "--output", "NAME,BACK-FILE", "--associated", file)
	if err != nil || out == "" {
		return "", err
	}
	var l struct {
		Devices []Device `json:"loopdevices"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return "", fmt.Errorf("loopvg: losetup --json: %w", err)
	}
	if len(l.Devices) == 0 {
		return "", nil
	}
	return l.Devices[0].Name, nil
}

// Device is an attached loop device.
type Device struct {
	Name     string `json:"name"`
	BackFile string `json:"back-file"`
}

// List returns the attached loop devices. A backing file deleted while attached keeps the
// " (deleted)" suffix losetup shows.
func List(ctx context.Context, environ []string) ([]Device, error) {
	out, err := output(ctx, environ, "losetup", "--list", "--json", "--output", "NAME,BACK-FILE")
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, nil
	}
	var l struct {
		Devices []Device `json:"loopdevices"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("loopvg: losetup --json: %w", err)
	}
	return l.Devices, nil
}

func createSparse(path string, size int64) error {
	if size < 64<<20 {
		return fmt.Errorf("loopvg: size %d is below 64 MiB", size)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("loopvg: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("loopvg: %w", err)
	}
	return nil
}

func lvmArgs(o Options, args []string) []string {
	if o.MetadataOnly {
		args = append(args, "--config", lvm.MetadataOnlyConfig)
	}
	return args
}

func env(environ []string) []string {
	if environ == nil {
		return os.Environ()
	}
	return environ
}

// output runs a command and returns its trimmed standard output; a failure carries its
// standard error.
func output(ctx context.Context, environ []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(env(environ), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
