package kubelocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// lockFile names the one cluster this machine runs: two kube-proxies would fight over the
// same iptables chains, and two kubelets over the kernel settings.
const lockFile = "/run/plinth-kube.dir"

// sysctls the kubelet, kube-proxy or Up itself may change; Down puts back what they were.
var sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
	"net/ipv4/conf/all/route_localnet",
}

// containerLogDir is where the kubelet links every container's log, whatever its root-dir.
const containerLogDir = "/var/log/containers"

func cgroupName(l layout) string { return "plinth-kube-" + l.NodeName }

// ErrMissing: a program the cluster needs is not on this machine (the error says which and
// how to get it).
var ErrMissing = errors.New("kubelocal: missing")

// preflight says, before anything changes, what is missing and how to get it.
func preflight(l layout) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: root (the kubelet needs cgroups, mounts and the network)", ErrMissing)
	}
	var missing []string
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"} {
		if !executable(l.binary(c)) {
			missing = append(missing, l.binary(c)+" (make tools-k8s)")
		}
	}
	for _, b := range []string{l.certManagerBinary(), l.caInjectorBinary()} {
		if l.CertManager && !executable(b) {
			missing = append(missing, b+" (make tools-k8s)")
		}
	}
	if l.Storage && !executable(l.localPathBinary()) {
		missing = append(missing, l.localPathBinary()+" (make tools-k8s)")
	}
	for _, image := range slices.Sorted(maps.Keys(l.Programs)) {
		if len(l.Programs[image]) == 0 {
			missing = append(missing, "a program for image "+image)
		}
		for _, p := range l.Programs[image] {
			if host := hostPath(p); !executable(host) || static(host) != nil {
				missing = append(missing, host+" as a static executable (image "+image+")")
			}
		}
	}
	if !executable(filepath.Join(l.BinDir, "coredns")) {
		missing = append(missing, filepath.Join(l.BinDir, "coredns")+" (make tools-k8s)")
	}
	for _, p := range []struct{ name, pkg string }{
		{"containerd", "containerd"}, {"runc", "runc"}, {"ctr", "containerd"}, {"ip", "iproute2"},
		{"iptables", "iptables"},
	} {
		if _, err := exec.LookPath(p.name); err != nil {
			missing = append(missing, p.name+" (apt-get install "+p.pkg+")")
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if !executable("/usr/lib/cni/" + p) {
			missing = append(missing, "/usr/lib/cni/"+p+" (apt-get install containernetworking-plugins)")
		}
	}
	if _, err := kube.Etcd(); err != nil {
		missing = append(missing, "etcd (apt-get install etcd-server)")
	}
	if !executable(busyboxPath) {
		missing = append(missing, busyboxPath+" (apt-get install busybox-static)")
	}
	if l.VolumeGroup != "" {
		for _, c := range []string{"vgcreate", "losetup"} {
			if _, err := exec.LookPath(c); err != nil {
				missing = append(missing, c+" (apt-get install lvm2)")
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrMissing, strings.Join(missing, "; "))
	}
	return nil
}

// otherCluster names the directory of a cluster that runs on this machine, or "".
func otherCluster() string {
	data, err := os.ReadFile(lockFile)
	if err != nil {
		return ""
	}
	other := strings.TrimSpace(string(data))
	if !exists(filepath.Join(other, stateFile)) {
		return "" // stopped, or its Up failed before it saved anything
	}
	return other
}

// HoldMachine keeps any cluster from starting on this machine until release is called (Up
// waits for it, within its WaitForMachine; Down does not): a test checks what its Down left
// without another cluster starting in between.
func HoldMachine() (release func(), err error) {
	f, err := os.OpenFile(lockFile+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kubelocal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kubelocal: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing it releases the lock
}

// claimMachine runs claim (which must make the cluster's state file and name its directory in
// lockFile) once no other cluster runs here, waiting up to wait for one to stop. A file lock
// makes check and claim one step between processes.
func claimMachine(ctx context.Context, wait time.Duration, log func(string, ...any), claim func() error) error {
	deadline := time.Now().Add(wait)
	for said := false; ; said = true {
		other, err := func() (string, error) {
			release, err := HoldMachine()
			if err != nil {
				return "", err
			}
			defer release()
			if other := otherCluster(); other != "" {
				return other, nil
			}
			return "", claim()
		}()
		if err != nil || other == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubelocal: a cluster already runs on this machine, in %s: stop it first (make kube-down, or kubelocal.Down)", other)
		}
		if !said {
			log("kubelocal: waiting for the cluster in %s to stop (one runs per machine)", other)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// prepareHost saves the kernel settings, makes the bridge, lets pod
// traffic through the FORWARD chain and makes the cgroup the kubelet puts pods under.
func prepareHost(l layout, st *state) error {
	// Checked once this cluster holds the machine: another one may have just stopped.
	if _, err := os.Stat("/sys/class/net/" + l.Bridge); err == nil {
		return fmt.Errorf("kubelocal: network interface %s already exists: is something else using it?", l.Bridge)
	}
	if !exists("/proc/sys/net/bridge") {
		if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
			return fmt.Errorf("kubelocal: Services need br_netfilter: modprobe br_netfilter: %v: %s", err, out)
		}
	}
	st.Sysctls = map[string]string{}
	for _, k := range sysctls {
		if v, err := os.ReadFile("/proc/sys/" + k); err == nil {
			st.Sysctls[k] = strings.TrimSpace(string(v))
		}
	}
	st.MadeContainerLogDir = !exists(containerLogDir)
	st.Bridge = l.Bridge
	if err := st.save(l.Dir); err != nil {
		return err
	}
	for k, v := range map[string]string{"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1"} {
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			return fmt.Errorf("kubelocal: sysctl %s: %w", k, err)
		}
	}
	prefix := netip.MustParsePrefix(l.PodCIDR)
	for _, args := range [][]string{
		{"link", "add", l.Bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", l.nodeIP, prefix.Bits()), "dev", l.Bridge},
		{"link", "set", l.Bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubelocal: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Docker sets the FORWARD policy to DROP; pods' traffic crosses it once br_netfilter
	// hands bridged packets to iptables.
	for _, dir := range []string{"-i", "-o"} {
		rule := []string{"FORWARD", dir, l.Bridge, "-m", "comment", "--comment", "plinth-kube " + l.Bridge, "-j", "ACCEPT"}
		if out, err := exec.Command("iptables", append([]string{"-w", "-I"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubelocal: iptables -I %s: %v: %s", strings.Join(rule, " "), err, out)
		}
		st.Rules = append(st.Rules, rule)
		if err := st.save(l.Dir); err != nil {
			return err
		}
	}
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, cgroupName(l))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("kubelocal: cgroup %s: %w", dir, err)
		}
		// A new v1 cpuset has no CPUs or memory nodes until given its parent's.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil && exists(filepath.Join(dir, f)) {
				_ = os.WriteFile(filepath.Join(dir, f), v, 0o644)
			}
		}
	}
	return nil
}

// mount is one line of /proc/self/mountinfo.
type mount struct{ point, fsType string }

// mounts lists this process's mounts.
func mounts() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		m := mount{point: unescapeMount(fields[4])}
		if i := slices.Index(fields, "-"); i > 0 && i+1 < len(fields) {
			m.fsType = fields[i+1]
		}
		out = append(out, m)
	}
	return out
}

// cgroupHierarchies are the mount points of every cgroup hierarchy (v1 controllers, the
// named systemd one, v2).
func cgroupHierarchies() []string {
	var out []string
	for _, m := range mounts() {
		if m.fsType == "cgroup" || m.fsType == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	var out []string
	for _, m := range mounts() {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	// Longer paths are deeper; the same path mounted twice is unmounted twice.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if len(out[j]) > len(out[i]) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// executable: path is a regular file someone may run.
func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}
