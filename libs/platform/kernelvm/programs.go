package kernelvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// program is a host program this package runs and the Debian package that brings it.
type program struct {
	name, pkg string
}

var (
	progQEMU     = program{"qemu-system-x86_64", "qemu-system-x86"}
	progAptCache = program{"apt-cache", "apt"}
	progAptGet   = program{"apt-get", "apt"}
	progDpkgDeb  = program{"dpkg-deb", "dpkg"}
	progDepmod   = program{"depmod", "kmod"}
	progModprobe = program{"modprobe", "kmod"}
	progBusybox  = program{"busybox", "busybox-static"}
	progXZ       = program{"xz", "xz-utils"}
)

// look finds p on PATH, then in /usr/sbin and /sbin, which a non-login shell's PATH may lack.
func (p program) look() (string, error) {
	if path, err := exec.LookPath(p.name); err == nil {
		return path, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		path := filepath.Join(dir, p.name)
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found: apt-get install %s", ErrUnavailable, p.name, p.pkg)
}

// lookAll finds every program of ps, or says in one error what to install.
func lookAll(ps ...program) (map[string]string, error) {
	found := map[string]string{}
	var missing, pkgs []string
	for _, p := range ps {
		path, err := p.look()
		if err != nil {
			missing = append(missing, p.name)
			if !slices.Contains(pkgs, p.pkg) {
				pkgs = append(pkgs, p.pkg)
			}
			continue
		}
		found[p.name] = path
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not found: apt-get install %s", ErrUnavailable,
			strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return found, nil
}

// runIn runs path with args in dir and returns its standard output; a failure's error
// carries the tail of its standard error.
func runIn(ctx context.Context, dir, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(path), strings.Join(args, " "), err, tail(stderr.String(), 800))
	}
	return stdout.Bytes(), nil
}

// tail returns at most the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// unavailable wraps err, from a step that fails on a machine without the package lists or
// the network, as ErrUnavailable.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
