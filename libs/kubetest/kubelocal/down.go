package kubelocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ErrNoCluster: Down found no cluster in the directory.
var ErrNoCluster = errors.New("kubelocal: no cluster there")

// Down stops the cluster in dir and undoes what it changed on this machine: pods stopped,
// kube-proxy's and the kubelet's iptables chains and Up's rules removed, mounts and cgroups
// gone, the kernel settings back to what they were, the bridge deleted, dir removed.
func Down(ctx context.Context, dir string, log func(format string, args ...any)) error {
	st, l, err := loadCluster(dir, log)
	if err != nil {
		return err
	}
	return down(ctx, l, st)
}

func down(ctx context.Context, l layout, st *state) error {
	log := l.Log
	var errs []error
	stop := func(name string, grace time.Duration) {
		if p, ok := st.proc(name); ok {
			p.stop(grace)
		}
	}
	// Pods first, while the kubelet can still stop them properly (its CNI teardown removes
	// each pod's network namespace and address); no controller may recreate them meanwhile.
	stop("kube-controller-manager", 10*time.Second)
	stop("kube-scheduler", 10*time.Second)
	if p, ok := st.proc("kubelet"); ok && p.alive() {
		if paths, err := hostPaths(ctx, l); err == nil {
			st.HostPaths = append(st.HostPaths, paths...)
			_ = st.save(l.Dir)
		}
		log("kubelocal: stopping every pod")
		if err := deleteAllPods(ctx, l, time.Minute); err != nil {
			log("kubelocal: pods did not all stop (they are killed instead): %v", err)
		}
	}
	// Its iptables chains go with the kubelet's below (removeIptables); `kube-proxy --cleanup`
	// would want ipset and nft too, for modes this cluster does not use.
	stop("kube-proxy", 10*time.Second)
	stop("kubelet", 20*time.Second)
	stop("containerd", 20*time.Second)
	log("kubelocal: killing what is left of the pods")
	killCgroup(l)
	killShims(l)
	for _, m := range mountsUnder(l.Dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
		}
	}
	errs = append(errs, removeVolumeGroup(st)...)
	errs = append(errs, removePodNetns(l)...)
	errs = append(errs, removeCgroups(l)...)
	errs = append(errs, removeIptables(st)...)
	if st.Bridge != "" && exists("/sys/class/net/"+st.Bridge) {
		if out, err := exec.Command("ip", "link", "del", st.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", st.Bridge, err, out))
		}
	}
	keys := make([]string, 0, len(st.Sysctls))
	for k := range st.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := "/proc/sys/" + k
		if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) != st.Sysctls[k] {
			if err := os.WriteFile(path, []byte(st.Sysctls[k]), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore sysctl %s: %w", k, err))
			}
		}
	}
	// Whatever else runs (CoreDNS, a component of a newer Up), newest first; the apiserver
	// and etcd last.
	for i := len(st.Processes) - 1; i >= 0; i-- {
		if n := st.Processes[i].Name; n != "kube-apiserver" && n != "etcd" {
			st.Processes[i].stop(10 * time.Second)
		}
	}
	stop("kube-apiserver", 15*time.Second)
	stop("etcd", 10*time.Second)
	errs = append(errs, removeContainerLogs(l, st)...)
	errs = append(errs, removeHostPaths(st)...)
	if data, err := os.ReadFile(lockFile); err == nil && strings.TrimSpace(string(data)) == l.Dir {
		_ = os.Remove(lockFile)
	}
	for _, p := range st.Processes {
		if p.alive() {
			errs = append(errs, fmt.Errorf("%s (pid %d) still runs", p.Name, p.Pid))
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubelocal: down left things behind: %w", err)
	}
	log("kubelocal: stopped; %s removed", l.Dir)
	return nil
}

// deleteAllPods deletes every pod and waits until the kubelet has stopped them all.
func deleteAllPods(ctx context.Context, l layout, timeout time.Duration) error {
	client, err := adminClient(l)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](5)})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d pods left", len(pods.Items))
			}
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// hostPaths lists the hostPath volumes pods asked the kubelet to create when missing.
func hostPaths(ctx context.Context, l layout) ([]string, error) {
	client, err := adminClient(l)
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			hp := v.HostPath
			if hp == nil || hp.Type == nil || (*hp.Type != corev1.HostPathDirectoryOrCreate && *hp.Type != corev1.HostPathFileOrCreate) {
				continue
			}
			if path := filepath.Clean(hp.Path); filepath.IsAbs(path) && path != "/" && !slices.Contains(out, path) {
				out = append(out, path)
			}
		}
	}
	return out, nil
}

// removeHostPaths removes the hostPath volumes pods had created (born after the cluster
// started) with what is in them; a path that was there before stays as it is.
func removeHostPaths(st *state) []error {
	var errs []error
	for _, path := range st.HostPaths {
		var sx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &sx); err != nil {
			continue // gone, or never made
		}
		if sx.Mask&unix.STATX_BTIME == 0 || time.Unix(sx.Btime.Sec, int64(sx.Btime.Nsec)).Before(st.Started) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s (made by the kubelet for a pod): %w", path, err))
		}
	}
	return errs
}

// killCgroup kills every process left in the cluster's cgroups (containers whose shim died
// first), until none is left.
func killCgroup(l layout) {
	for range 50 {
		found := false
		for _, h := range cgroupHierarchies() {
			_ = filepath.WalkDir(filepath.Join(h, cgroupName(l)), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				data, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						found = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killShims kills containerd shims of the cluster's containerd that outlived it.
func killShims(l layout) {
	sock := []byte(l.path(containerdSock))
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmdline, []byte("containerd-shim")) && bytes.Contains(cmdline, sock) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removePodNetns removes the network namespaces containerd made for pods that were not torn
// down: those whose interface holds an address of the pod network.
func removePodNetns(l layout) []error {
	var errs []error
	pods := netip.MustParsePrefix(l.PodCIDR)
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		out, err := exec.Command("ip", "-n", e.Name(), "-4", "-o", "addr", "show").Output()
		mine := false
		if err == nil {
			for _, f := range strings.Fields(string(out)) {
				if p, err := netip.ParsePrefix(f); err == nil && pods.Contains(p.Addr()) {
					mine = true
				}
			}
		}
		if !mine {
			continue
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", e.Name(), err, out))
		}
	}
	return errs
}

// removeCgroups removes the cluster's cgroup in every hierarchy, deepest first.
func removeCgroups(l layout) []error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, cgroupName(l))
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for range 20 { // a cgroup is busy for a moment after its last process died
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errs
}

// removeIptables deletes Up's rules and the chains the kubelet and kube-proxy left (KUBE-*),
// in both address families.
func removeIptables(st *state) []error {
	var errs []error
	for _, rule := range st.Rules {
		if exec.Command("iptables", append([]string{"-w", "-C"}, rule...)...).Run() != nil {
			continue
		}
		if out, err := exec.Command("iptables", append([]string{"-w", "-D"}, rule...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -D %s: %v: %s", strings.Join(rule, " "), err, out))
		}
	}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(cmd); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle"} {
			errs = append(errs, removeKubeChains(cmd, table)...)
		}
	}
	return errs
}

// removeKubeChains deletes every rule that jumps to a KUBE-* chain of table, then the chains.
func removeKubeChains(cmd, table string) []error {
	out, err := exec.Command(cmd+"-save", "-t", table).Output()
	if err != nil {
		return nil // no such table in this family
	}
	var errs []error
	var chains []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, ":KUBE-") {
			chains = append(chains, strings.Fields(line[1:])[0])
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "-A" || strings.HasPrefix(f[1], "KUBE-") || !strings.Contains(line, "-j KUBE-") {
			continue
		}
		// iptables-save quotes comments; iptables wants them as one argument.
		args := append([]string{"-w", "-t", table, "-D"}, splitRule(line[3:])...)
		if out, err := exec.Command(cmd, args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, out))
		}
	}
	for _, op := range []string{"-F", "-X"} {
		for _, c := range chains {
			if out, err := exec.Command(cmd, "-w", "-t", table, op, c).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s -t %s %s %s: %v: %s", cmd, table, op, c, err, out))
			}
		}
	}
	return errs
}

// splitRule splits an iptables-save rule into arguments, keeping "quoted strings" whole.
func splitRule(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted, have = !quoted, true
		case c == ' ' && !quoted:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// removeContainerLogs removes the kubelet's links to the cluster's container logs, and the
// directory if the kubelet made it.
func removeContainerLogs(l layout, st *state) []error {
	entries, _ := os.ReadDir(containerLogDir)
	for _, e := range entries {
		p := filepath.Join(containerLogDir, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, l.Dir+"/") {
			_ = os.Remove(p)
		}
	}
	if st.MadeContainerLogDir {
		if err := os.Remove(containerLogDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return []error{fmt.Errorf("%s: %w", containerLogDir, err)}
		}
	}
	return nil
}

// waitNodeReady waits for the Node's Ready condition.
func waitNodeReady(ctx context.Context, client kubernetes.Interface, name string, timeout time.Duration) error {
	return poll(ctx, timeout, func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s not Ready: %s: %s", name, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("node %s has no Ready condition yet", name)
	})
}

// waitServiceAccount waits for the default namespace's ServiceAccount: the controllers run.
func waitServiceAccount(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	return poll(ctx, timeout, func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func poll(ctx context.Context, timeout time.Duration, try func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubelocal: after %s: %w", timeout, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
