package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Sandbox runs each machine in a runc container that joins the machine's network namespace:
// its own user (root inside is an unprivileged uid on the host), mount, PID, IPC and UTS
// namespaces, a root filesystem of its own, Capabilities only, and cgroup limits. The
// host's system directories are bound in read-only; nothing else of the host is there.
type Sandbox struct {
	// Runc is the runc program; default: found on PATH, else /usr/sbin/runc.
	Runc string
	// Init is the machine's PID 1, which reaps the processes jobs leave behind (tini); it is
	// bound read-only at /init. Default: tini on PATH, else /usr/bin/tini.
	Init string
	// Dir holds each machine's bundle (config.json) and root filesystem (its disk); default
	// /var/lib/plinth-vagrant-netns. Every directory above it must be searchable by others
	// (runc opens the root filesystem as the machine's uid).
	Dir string
	// State is runc's state directory (runc --root) for the machines; default
	// /run/plinth-vagrant-netns.
	State string
	// Share lists host directories or files each machine sees read-only at the same path
	// (kaas's kube binaries).
	Share []string
	// HostID is the first host uid and gid of the machines' 65536: root in a machine is
	// HostID on the host; default 1000000000.
	HostID uint32
	// Memory is each machine's memory limit in bytes; default 2 GiB.
	Memory int64
	// Pids is each machine's limit of processes and threads; default 2048.
	Pids int64
	// CPUs is each machine's CPU limit in CPUs; default 1.
	CPUs float64
}

// hostIDs is how many uids and gids a machine has (0-65535 inside).
const hostIDs = 65536

// cpuPeriod is the CFS period the CPU limit is a quota of (the kernel's default).
const cpuPeriod = 100000

// systemDirs are bound read-only from the host into every machine (where they are
// directories; symlinks, as with a merged /usr, are copied as symlinks).
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// Capabilities are all a machine's processes hold, and only inside the machine's user
// namespace: enough for root in the machine to own, chown and signal its own files and
// processes, nothing over the host's kernel, network or devices.
var Capabilities = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE"}

// withDefaults fills the zero fields and checks the rest.
func (s Sandbox) withDefaults() (Sandbox, error) {
	if s.Runc == "" {
		s.Runc = lookProgram("runc", "/usr/sbin/runc", "/usr/bin/runc")
	}
	if s.Init == "" {
		s.Init = lookProgram("tini", "/usr/bin/tini")
	}
	if s.Dir == "" {
		s.Dir = "/var/lib/plinth-vagrant-netns"
	}
	if s.State == "" {
		s.State = "/run/plinth-vagrant-netns"
	}
	if s.HostID == 0 {
		s.HostID = 1_000_000_000
	}
	if s.Memory == 0 {
		s.Memory = 2 << 30
	}
	if s.Pids == 0 {
		s.Pids = 2048
	}
	if s.CPUs == 0 {
		s.CPUs = 1
	}
	var errs []error
	for name, dir := range map[string]string{"machine directory": s.Dir, "runc state directory": s.State} {
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
			errs = append(errs, fmt.Errorf("sandbox %s %q must be a clean absolute path other than /", name, dir))
		}
	}
	for _, p := range s.Share {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			errs = append(errs, fmt.Errorf("shared path %q must be a clean absolute path other than /", p))
		}
	}
	if s.HostID < 65536 || uint64(s.HostID)+hostIDs > 1<<32-1 {
		errs = append(errs, fmt.Errorf("sandbox host id %d: want 65536 to %d, clear of the host's own users", s.HostID, uint64(1<<32-1-hostIDs)))
	}
	if s.Memory < 64<<20 {
		errs = append(errs, fmt.Errorf("sandbox memory %d: want at least 64M", s.Memory))
	}
	if s.Pids < 16 {
		errs = append(errs, fmt.Errorf("sandbox pids %d: want at least 16", s.Pids))
	}
	if s.CPUs < 0.01 || s.CPUs > 1024 {
		errs = append(errs, fmt.Errorf("sandbox cpus %g: want 0.01 to 1024", s.CPUs))
	}
	return s, errors.Join(errs...)
}

// lookProgram is name on PATH, else the first of paths that exists, else name.
func lookProgram(name string, paths ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return name
}

// bundle is machine ns's runc bundle directory; its root filesystem is rootfs below it.
func (s *Sandbox) bundle(ns string) string { return filepath.Join(s.Dir, ns) }

// prepare writes machine ns's bundle: a root filesystem the first time (the machine's disk,
// kept across halt and up), and a fresh config.json each time, so a changed setting applies
// at the next up. The root filesystem belongs to the machine's root; nothing inside it is
// touched again by the host, since a job may have replaced any of it with a symlink.
func (s *Sandbox) prepare(ns, hostname string) error {
	if err := os.MkdirAll(s.Dir, 0o711); err != nil {
		return fmt.Errorf("sandbox machine directory: %w", err)
	}
	if err := searchable(s.Dir); err != nil {
		return err
	}
	dir := s.bundle(ns)
	if err := os.Mkdir(dir, 0o710); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("sandbox bundle: %w", err)
	}
	// Only root and the machine's root (which runc is when it opens the root filesystem)
	// may pass: the machine's files are not for the host's other users.
	if err := os.Chown(dir, 0, int(s.HostID)); err != nil {
		return fmt.Errorf("sandbox bundle: %w", err)
	}
	if err := os.Chmod(dir, 0o710); err != nil {
		return fmt.Errorf("sandbox bundle: %w", err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	if _, err := os.Lstat(rootfs); errors.Is(err, os.ErrNotExist) {
		if err := s.makeRootfs(dir); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s.spec(ns, hostname), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}

// makeRootfs builds a new root filesystem in a temporary directory and renames it into
// place, so a crash leaves either none or a whole one.
func (s *Sandbox) makeRootfs(bundle string) error {
	tmp, err := os.MkdirTemp(bundle, "rootfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dirs := map[string]os.FileMode{"proc": 0o555, "dev": 0o755, "run": 0o755, "tmp": 0o1777, "root": 0o700,
		"var": 0o755, "var/tmp": 0o1777, "home": 0o755, "opt": 0o755, "srv": 0o755, "mnt": 0o755}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue // not on this host (lib32 …)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, filepath.Join(tmp, d)); err != nil {
				return err
			}
		case fi.IsDir():
			dirs[strings.TrimPrefix(d, "/")] = 0o755
		}
	}
	for d, mode := range dirs {
		p := filepath.Join(tmp, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	// Owned by the machine's root: it writes its disk as it would a VM's.
	err = filepath.WalkDir(tmp, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(s.HostID), int(s.HostID))
	})
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(bundle, "rootfs"))
}

// searchable checks that the machine's uid can reach dir: every directory from / down must
// let others search it, as runc opens the root filesystem inside the user namespace.
func searchable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox machine directory %s: %s is not searchable by others (mode %v), so the machines' uid cannot reach their root filesystems: chmod o+x it or choose another directory (PLINTH_VAGRANT_NETNS_MACHINE_DIR)", dir, d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

// spec is machine ns's container: tini as PID 1 keeping it alive, root mapped to HostID.
func (s *Sandbox) spec(ns, hostname string) ociSpec {
	// Recursive binds, read-only all the way down: a non-recursive bind of a directory with
	// mounts below it (a file bound over a program, /etc/resolv.conf in a container) is
	// refused inside a user namespace (EINVAL), since it would uncover what they hide.
	ro := []string{"rbind", "ro", "rro", "nosuid", "nodev"}
	mounts := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755", "size=65536k"}},
		{Destination: "/init", Type: "bind", Source: s.Init, Options: ro},
	}
	for _, d := range systemDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			mounts = append(mounts, ociMount{Destination: d, Type: "bind", Source: d, Options: ro})
		}
	}
	for _, p := range s.Share {
		// One not there yet (bin/ before its first build) is left out rather than failing
		// every machine's up; the next up binds it.
		if _, err := os.Stat(p); err == nil {
			mounts = append(mounts, ociMount{Destination: p, Type: "bind", Source: p, Options: ro})
		}
	}
	ids := []ociIDMapping{{ContainerID: 0, HostID: s.HostID, Size: hostIDs}}
	sp := ociSpec{
		Version: "1.0.2",
		Process: ociProcess{
			Args: []string{"/init", "--", "sleep", "infinity"},
			Env:  []string{defaultPath}, Cwd: "/",
			Capabilities: s.capabilities(), NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: "rootfs"},
		Hostname: hostname,
		Mounts:   mounts,
		Linux: ociLinux{
			UIDMappings: ids, GIDMappings: ids,
			// No network namespace here: runc is started inside the machine's (nsenter), so
			// the container and every runc exec into it inherit it. A namespace entry would
			// make runc exec join the user namespace first, after which joining a network
			// namespace the host owns is refused (runc 1.1).
			Namespaces:  []ociNamespace{{Type: "user"}, {Type: "mount"}, {Type: "pid"}, {Type: "ipc"}, {Type: "uts"}},
			CgroupsPath: "/plinth-vagrant-netns/" + ns,
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	sp.Linux.Resources.Memory.Limit = s.Memory
	sp.Linux.Resources.Pids.Limit = s.Pids
	sp.Linux.Resources.CPU.Quota, sp.Linux.Resources.CPU.Period = int64(s.CPUs*cpuPeriod), cpuPeriod
	return sp
}

// capabilities are the sets of every machine process: Capabilities, nothing to inherit.
func (s *Sandbox) capabilities() ociCapabilities {
	return ociCapabilities{Bounding: Capabilities, Effective: Capabilities, Permitted: Capabilities, Inheritable: []string{}, Ambient: []string{}}
}
