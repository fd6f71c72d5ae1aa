package kernelvm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// metaPackage is Debian's package that always depends on the current kernel.
const metaPackage = "linux-image-amd64"

// guest is a prepared guest: the kernel, its unpacked modules and the initramfs, in one
// directory of the cache that is never changed once made.
type guest struct {
	// release is the kernel's release (uname -r), the directory's name.
	release string
	// image is the uncompressed vmlinux, or the bzImage when it could not be extracted.
	image string
	// baseInitrd is the initramfs without the stage scripts.
	baseInitrd string
	// modules is the directory that holds release/ with the modules and modules.dep.
	modules string
}

// DefaultCacheDir is where prepared guests are kept: $XDG_CACHE_HOME/plinth/kernelvm, or
// ~/.cache/plinth/kernelvm. Each kernel version takes ~420 MB; delete the directory of an
// old one at will.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: no cache directory (%v): set XDG_CACHE_HOME or HOME", ErrUnavailable, err)
	}
	return filepath.Join(base, "plinth", "kernelvm"), nil
}

// prepare returns the guest of the kernel Debian's linux-image-amd64 names now, made in the
// cache on first use. Several processes may prepare at once: one builds (under a file lock,
// in a temporary directory renamed into place when complete), the others wait and use it.
// Without package lists or network, the newest guest prepared before serves.
func prepare(ctx context.Context, cacheDir string, logf func(string, ...any)) (*guest, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("%w: the guest runs the host's programs, so the host must be linux/amd64, not %s/%s",
			ErrUnavailable, runtime.GOOS, runtime.GOARCH)
	}
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	pkg, err := kernelPackage(ctx)
	if err != nil {
		if g := newestPrepared(cacheDir); g != nil {
			logf("kernelvm: %v; using the guest prepared before with kernel %s", err, g.release)
			return g, nil
		}
		return nil, err
	}
	release := strings.TrimPrefix(pkg, "linux-image-")
	return prepareOnce(ctx, cacheDir, release, logf, func(tmp string) error {
		return build(ctx, tmp, pkg, release, logf)
	})
}

// prepareOnce returns the guest in cacheDir/release, made by build (into an empty temporary
// directory beside it) when missing. Several processes may prepare at once: one builds,
// under a file lock, and renames the directory into place when complete; the others wait
// for the lock and find it made.
func prepareOnce(ctx context.Context, cacheDir, release string, logf func(string, ...any), build func(tmp string) error) (*guest, error) {
	dir := filepath.Join(cacheDir, release)
	if g, err := openGuest(dir); err == nil {
		return g, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, "."+release+".lock"), logf)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if g, err := openGuest(dir); err == nil {
		return g, nil // another process made it while this one waited
	}
	// Under the lock, temporary directories are what a build that died left.
	stale, _ := filepath.Glob(filepath.Join(cacheDir, "."+release+".tmp-*"))
	for _, s := range stale {
		_ = os.RemoveAll(s)
	}
	tmp, err := os.MkdirTemp(cacheDir, "."+release+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // nothing left to remove once renamed
	start := time.Now()
	logf("kernelvm: preparing a guest with kernel %s in %s (once per kernel version)", release, dir)
	if err := build(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	logf("kernelvm: guest with kernel %s prepared in %v", release, time.Since(start).Round(time.Second))
	return openGuest(dir)
}

// kernelPackage asks apt which kernel package linux-image-amd64 depends on now.
func kernelPackage(ctx context.Context) (string, error) {
	p, err := progAptCache.look()
	if err != nil {
		return "", err
	}
	out, err := runIn(ctx, "", p, "depends", metaPackage)
	if err != nil {
		return "", unavailable(fmt.Errorf("no kernel package (apt-get update first?): %w", err))
	}
	return parseDepends(out)
}

// parseDepends finds the kernel image package in `apt-cache depends linux-image-amd64`.
func parseDepends(out []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, ok := strings.CutPrefix(strings.TrimLeft(sc.Text(), " |"), "Depends: ")
		if ok && strings.HasPrefix(name, "linux-image-") && !strings.ContainsAny(name, "<>/ ") {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: apt-cache depends %s names no linux-image package", ErrUnavailable, metaPackage)
}

// openGuest returns the guest prepared in dir, or an error when there is none.
func openGuest(dir string) (*guest, error) {
	g := &guest{release: filepath.Base(dir), baseInitrd: filepath.Join(dir, "base.cpio")}
	for _, m := range []string{"tree/lib/modules", "tree/usr/lib/modules"} {
		if fi, err := os.Stat(filepath.Join(dir, m, g.release, "modules.dep")); err == nil && fi.Mode().IsRegular() {
			g.modules = filepath.Join(dir, m)
			break
		}
	}
	for _, img := range []string{"vmlinux", "tree/boot/vmlinuz-" + g.release} {
		if fi, err := os.Stat(filepath.Join(dir, img)); err == nil && fi.Mode().IsRegular() {
			g.image = filepath.Join(dir, img)
			break
		}
	}
	if _, err := os.Stat(g.baseInitrd); err != nil || g.modules == "" || g.image == "" {
		return nil, fmt.Errorf("kernelvm: no prepared guest in %s", dir)
	}
	return g, nil
}

// newestPrepared is the most recently prepared guest in cacheDir, or nil.
func newestPrepared(cacheDir string) *guest {
	entries, _ := os.ReadDir(cacheDir)
	var best *guest
	var bestTime time.Time
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		g, err := openGuest(filepath.Join(cacheDir, e.Name()))
		fi, statErr := os.Stat(filepath.Join(cacheDir, e.Name()))
		if err == nil && statErr == nil && fi.ModTime().After(bestTime) {
			best, bestTime = g, fi.ModTime()
		}
	}
	return best
}

// lockFile takes an exclusive flock on path, waiting for ctx; unlock releases it.
func lockFile(ctx context.Context, path string, logf func(string, ...any)) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for said := false; ; said = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("kernelvm: lock %s: %w", path, err)
		}
		if !said {
			logf("kernelvm: another process is preparing the guest; waiting for it (%s)", path)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// build makes the guest of pkg in the empty directory tmp: download, unpack, depmod,
// vmlinux, initramfs.
func build(ctx context.Context, tmp, pkg, release string, logf func(string, ...any)) error {
	progs, err := lookAll(progAptGet, progDpkgDeb, progDepmod, progModprobe, progBusybox)
	if err != nil {
		return err
	}
	// apt-get download needs no root and writes into its working directory.
	if _, err := runIn(ctx, tmp, progs["apt-get"], "download", pkg); err != nil {
		return unavailable(fmt.Errorf("download the kernel: %w", err))
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("kernelvm: apt-get download %s left %d .deb files", pkg, len(debs))
	}
	tree := filepath.Join(tmp, "tree")
	if _, err := runIn(ctx, tmp, progs["dpkg-deb"], "-x", debs[0], tree); err != nil {
		return fmt.Errorf("kernelvm: unpack the kernel: %w", err)
	}
	if err := os.Remove(debs[0]); err != nil {
		return err
	}
	if err := linkModuleDirs(tree, release); err != nil {
		return err
	}
	// The package ships no modules.dep: modprobe needs it, in the guest and below.
	if _, err := runIn(ctx, tmp, progs["depmod"], "-b", tree, release); err != nil {
		return fmt.Errorf("kernelvm: depmod: %w", err)
	}
	bzImage := filepath.Join(tree, "boot", "vmlinuz-"+release)
	// The uncompressed kernel boots ~4 s faster: TCG decompresses slowly.
	if err := extractVmlinux(ctx, bzImage, filepath.Join(tmp, "vmlinux")); err != nil {
		logf("kernelvm: booting the compressed kernel: %v", err)
	}
	return writeBaseInitramfs(ctx, filepath.Join(tmp, "base.cpio"), progs, tree, release)
}

// linkModuleDirs makes the modules reachable at both lib/modules and usr/lib/modules of
// tree, wherever the package put them, so the host's depmod and modprobe find them whatever
// their compiled-in directory.
func linkModuleDirs(tree, release string) error {
	lib, usr := filepath.Join(tree, "lib", "modules"), filepath.Join(tree, "usr", "lib", "modules")
	have := slices.IndexFunc([]string{lib, usr}, func(d string) bool {
		_, err := os.Stat(filepath.Join(d, release))
		return err == nil
	})
	if have < 0 {
		return fmt.Errorf("kernelvm: the kernel package has no modules for %s", release)
	}
	from, target := usr, "../../lib/modules" // relative to from's directory
	if have == 1 {
		from, target = lib, "../usr/lib/modules"
	}
	if _, err := os.Lstat(from); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(from), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, from)
}
