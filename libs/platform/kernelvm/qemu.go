package kernelvm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Paths inside the guest, set up by the stage scripts.
const (
	guestBusybox = "/run/plinth-kernelvm/bin/busybox"
	// guestfwdAddr is the address in QEMU's user network where the guest reaches the
	// forwarded ports.
	guestfwdAddr = "10.0.2.100"
	// startMarker is the console line stage 2 prints as the command starts.
	startMarker = "kernelvm: running the command"
)

// programs are the host's programs a run needs (lookAll's argument).
func (o Options) programs() []program {
	need := []program{progQEMU, progModprobe} // the guest runs the host's modprobe
	if len(o.ForwardPorts) > 0 {
		need = append(need, progBusybox) // QEMU runs busybox nc for each forwarded connection
	}
	return need
}

// run boots the guest and runs o.Command in it with progs, found by lookAll(o.programs()).
func (g *guest) run(ctx context.Context, o Options, progs map[string]string) (Result, error) {
	runDir, err := os.MkdirTemp("", "kernelvm-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(runDir)
	initrd, results := filepath.Join(runDir, "initrd.cpio"), filepath.Join(runDir, "results")
	if err := writeInitramfs(initrd, g.baseInitrd); err != nil {
		return Result{}, err
	}
	if err := os.Mkdir(results, 0o755); err != nil {
		return Result{}, err
	}
	var ports []string
	for _, p := range o.ForwardPorts {
		ports = append(ports, strconv.Itoa(p))
	}
	for name, content := range map[string]string{
		"modules":    g.modules + "\n",
		"command.sh": commandScript(o),
		"ports":      strings.Join(ports, "\n"),
	} {
		if err := os.WriteFile(filepath.Join(results, name), []byte(content), 0o644); err != nil {
			return Result{}, err
		}
	}

	cmd := exec.CommandContext(ctx, progs[progQEMU.name], g.qemuArgs(o, initrd, results, progs[progBusybox.name])...)
	// Its own process group holds QEMU and the relays it starts for forwarded connections:
	// all end together, and with the test process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	console := &console{log: o.Log, start: start}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = console, &stderr
	res := Result{Kernel: g.release}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("kernelvm: start QEMU: %w", err)
	}
	waitErr := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // relays still open, if any
	console.flush()
	res.Elapsed, res.Boot = time.Since(start), console.boot
	out, _ := os.ReadFile(filepath.Join(results, "output"))
	res.Output = string(out)
	if ctx.Err() != nil {
		return res, fmt.Errorf("kernelvm: QEMU killed after %v: %w", res.Elapsed.Round(time.Second), ctx.Err())
	}
	status, err := os.ReadFile(filepath.Join(results, "status"))
	if err == nil {
		res.ExitCode, err = strconv.Atoi(strings.TrimSpace(string(status)))
	}
	if err != nil {
		return res, fmt.Errorf("kernelvm: the guest gave no exit status (QEMU: %v, %s); its console ended with:\n%s",
			waitErr, tail(stderr.String(), 500), console.tail())
	}
	return res, nil
}

// qemuArgs are QEMU's flags: software emulation (no KVM here) with a translation cache of
// 256 MiB (the 1 GiB default bloats QEMU to 1.5 GiB), one vCPU (faster than two on a
// 2-core host), no default devices, the serial console on standard output, the host's root
// read-only and the results directory writable over virtio-9p, and, with forwarded ports,
// a restricted user network whose only way out is the guestfwd rules: each connection to
// 10.0.2.100:<port> runs `busybox nc 127.0.0.1 <port>` on the host.
func (g *guest) qemuArgs(o Options, initrd, results, busybox string) []string {
	mem := o.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	args := []string{
		"-machine", "q35", "-accel", "tcg,tb-size=256", "-cpu", "max", "-smp", "1",
		"-m", strconv.Itoa(mem), "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-serial", "stdio",
		"-kernel", g.image, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
		"-virtfs", "local,path=" + qemuEscape(results) + ",mount_tag=results,security_model=none",
	}
	if len(o.ForwardPorts) > 0 {
		netdev := "user,id=n0,restrict=on"
		for _, p := range o.ForwardPorts {
			netdev += fmt.Sprintf(",guestfwd=tcp:%s:%d-cmd:%s nc 127.0.0.1 %d", guestfwdAddr, p, qemuEscape(busybox), p)
		}
		// romfile= : no PXE option ROM (a package of its own), which -kernel never uses.
		args = append(args, "-netdev", netdev, "-device", "virtio-net-pci,netdev=n0,romfile=")
	}
	return args
}

// qemuEscape doubles the commas of a value in a QEMU option string.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// commandScript is command.sh, which stage 2 runs with sh: change to o.Dir and exec the
// command with exactly its environment.
func commandScript(o Options) string {
	env := append([]string(nil), o.Env...)
	if !hasKey(env, "PATH") {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	env = append(env, "DM_DISABLE_UDEV=1", GuestEnv+"=1")
	dir := o.Dir
	if dir == "" {
		dir = "/"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cd %s || exit 125\nexec %s env -i", shellQuote(dir), guestBusybox)
	for _, w := range append(env, o.Command...) {
		b.WriteString(" " + shellQuote(w))
	}
	b.WriteString("\n")
	return b.String()
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// shellQuote quotes s for sh: in single quotes, each single quote inside closing the quotes,
// escaped with a backslash, and opening them again.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
