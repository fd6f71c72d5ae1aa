package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// errNoContainer is runc's answer about a container that does not exist.
var errNoContainer = errors.New("container does not exist")

// netnsPath is where `ip netns add` keeps machine ns's network namespace.
func netnsPath(ns string) string { return filepath.Join("/run/netns", ns) }

// cmdFiles are the files a runc invocation hands on to the process it starts; nil ones
// are /dev/null, and runc's own output is collected.
type cmdFiles struct {
	stdout, stderr *os.File
	extra          []*os.File
}

// runc runs runc with the machines' state directory. inNetns, when set, starts it inside
// that machine's network namespace (nsenter), which the container and its processes then
// share. Errors carry the last line runc logged.
func (p *Provider) runc(ctx context.Context, inNetns string, args ...string) ([]byte, error) {
	return p.runcWith(ctx, inNetns, nil, args...)
}

// runcWith is runc with files for the process runc starts (setup fills them).
func (p *Provider) runcWith(ctx context.Context, inNetns string, setup func(*cmdFiles), args ...string) ([]byte, error) {
	if err := os.MkdirAll(p.sb.State, 0o700); err != nil {
		return nil, fmt.Errorf("runc state directory: %w", err)
	}
	logFile, err := os.CreateTemp(p.sb.State, "runc-*.log")
	if err != nil {
		return nil, fmt.Errorf("runc log: %w", err)
	}
	logPath := logFile.Name()
	_ = logFile.Close()
	defer os.Remove(logPath)
	argv := append([]string{"--root", p.sb.State, "--log", logPath}, args...)
	prog := p.sb.Runc
	if inNetns != "" {
		argv = append([]string{"--net=" + netnsPath(inNetns), "--", p.sb.Runc}, argv...)
		prog = p.nsenter
	}
	cmd := exec.CommandContext(ctx, prog, argv...)
	cmd.Env = []string{"LC_ALL=C", defaultPath}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if setup != nil {
		// Files, not buffers: the process runc starts keeps them, and runc returns at once
		// (a buffer's pipe would stay open while that process lives). Unset ones are /dev/null.
		var f cmdFiles
		setup(&f)
		cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = nil, nil, f.extra
		if f.stdout != nil {
			cmd.Stdout = f.stdout
		}
		if f.stderr != nil {
			cmd.Stderr = f.stderr
		}
	}
	p.log.DebugContext(ctx, "runc", "args", args)
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if logged := lastLogLine(logPath); logged != "" {
			msg = logged
		}
		if strings.Contains(msg, "does not exist") {
			return nil, fmt.Errorf("runc %s: %s: %w", args[0], msg, errNoContainer)
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("runc %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
}

// lastLogLine is the message of the last line runc logged (JSON or text), bounded.
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	var rec struct {
		Msg string `json:"msg"`
	}
	if json.Unmarshal([]byte(last), &rec) == nil && rec.Msg != "" {
		last = rec.Msg
	}
	if len(last) > 500 {
		last = last[:500]
	}
	return last
}

// containerStatus is runc's status of machine ns's container ("running", "stopped", …), or
// "" when there is none.
func (p *Provider) containerStatus(ctx context.Context, ns string) (string, error) {
	out, err := p.runc(ctx, "", "state", ns)
	if errors.Is(err, errNoContainer) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var st struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return "", fmt.Errorf("runc state %s: unexpected output: %w", ns, err)
	}
	return st.Status, nil
}

// startContainer starts machine id's container in its network namespace unless it runs; a
// stopped one (its init was killed) is deleted and started again on the same disk.
func (p *Provider) startContainer(ctx context.Context, id string) error {
	ns := p.Namespace(id)
	status, err := p.containerStatus(ctx, ns)
	if err != nil || status == "running" {
		return err
	}
	if status != "" {
		if _, err := p.runc(ctx, "", "delete", "--force", ns); err != nil {
			return err
		}
	}
	if err := p.sb.prepare(ns, id); err != nil {
		return err
	}
	// Only its own machines' gids may use ICMP echo sockets there: ping works in the
	// machine without raw sockets, which its root may not open.
	pingRange := fmt.Sprintf("%d %d", p.sb.HostID, p.sb.HostID+hostIDs-1)
	if _, err := p.ip(ctx, "netns", "exec", ns, "sh", "-c", `echo "$1" >/proc/sys/net/ipv4/ping_group_range`, "sh", pingRange); err != nil {
		return err
	}
	// The container's init keeps runc's standard files: /dev/null, not a pipe of ours.
	_, err = p.runcWith(ctx, ns, func(*cmdFiles) {}, "run", "--detach", "--bundle", p.sb.bundle(ns), ns)
	return err
}

// stopContainer ends machine ns's container: SIGTERM to all its processes, SIGKILL to what
// is left after the grace period, and removes it (its cgroups too). Its disk stays.
func (p *Provider) stopContainer(ctx context.Context, ns string) error {
	status, err := p.containerStatus(ctx, ns)
	if err != nil || status == "" {
		return err
	}
	if status == "running" {
		if _, err := p.runc(ctx, "", "kill", "--all", ns, "TERM"); err != nil && !errors.Is(err, errNoContainer) {
			p.log.DebugContext(ctx, "runc kill", "machine", ns, "error", err.Error())
		}
		deadline := time.Now().Add(p.o.StopGrace)
		for time.Now().Before(deadline) {
			if status, err = p.containerStatus(ctx, ns); err != nil || status != "running" {
				break
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	_, err = p.runc(ctx, "", "delete", "--force", ns)
	if errors.Is(err, errNoContainer) {
		return nil
	}
	return err
}
