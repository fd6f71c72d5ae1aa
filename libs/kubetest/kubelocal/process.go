package kubelocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
	"github.com/plinth-dev/plinth/libs/platform/atomicfile"
)

const stateFile = "state.json"

// state is what Down needs to undo Up, saved after every step so a half-done Up can be
// undone too, by this process or another.
type state struct {
	Options   Options
	Started   time.Time
	Processes []proc
	// Sysctls holds the value of each kernel setting before the cluster started.
	Sysctls map[string]string
	// Rules are the iptables rules Up inserted, as `iptables` arguments after -I/-D.
	Rules [][]string
	// Bridge is set once Up made the bridge.
	Bridge string
	// MadeContainerLogDir: /var/log/containers did not exist before the kubelet.
	MadeContainerLogDir bool
	// HostPaths are the hostPath volumes pods had the kubelet create when missing (Down
	// removes those made after Started).
	HostPaths []string
	// VolumeGroup and LoopDevice are set once Up made them.
	VolumeGroup, LoopDevice string
}

// proc is one component running in the background.
type proc struct {
	Name string
	Pid  int
	// Since is the process's start time in clock ticks after boot (/proc/PID/stat field 22):
	// with Pid, it tells our process from a later one that got the same pid.
	Since uint64
}

func (s *state) save(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WritePrivate(filepath.Join(dir, stateFile), data)
}

func loadState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("kubelocal: %s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

// component is one program of the cluster.
type component struct {
	name  string
	path  string
	args  []string
	ready func(ctx context.Context) error
}

// startComponent runs c in a session of its own (it outlives this process), its output in
// logs/<name>.log, records it in the state and waits until ready answers.
func startComponent(ctx context.Context, l layout, st *state, c component) error {
	logPath := l.path("logs", c.name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("kubelocal: %s: %w", c.name, err)
	}
	defer out.Close()
	cmd := exec.Command(c.path, c.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = l.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kubelocal: start %s: %w", c.name, err)
	}
	// Reaps it if it ends while this process lives (Down in the same process, or a crash);
	// otherwise it is reparented and lives on.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	_, since, _ := procStat(cmd.Process.Pid)
	st.Processes = append(st.Processes, proc{Name: c.name, Pid: cmd.Process.Pid, Since: since})
	if err := st.save(l.Dir); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("kubelocal: %s exited (%v); last lines of %s:\n%s", c.name, err, logPath, tail(logPath, 20))
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.ready(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("kubelocal: %s not ready: %w; last lines of %s:\n%s", c.name, err, logPath, tail(logPath, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// procStat reads a process's state and start time (clock ticks after boot) from
// /proc/PID/stat.
func procStat(pid int) (state byte, since uint64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; fields after it follow its ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, errors.New("unexpected /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0, 0, errors.New("unexpected /proc stat")
	}
	since, err = strconv.ParseUint(f[19], 10, 64) // field 22 overall
	return f[0][0], since, err
}

// alive reports whether p still runs (a zombie does not).
func (p proc) alive() bool {
	state, since, err := procStat(p.Pid)
	return err == nil && since == p.Since && state != 'Z'
}

// stop ends p: SIGTERM to its session, SIGKILL after grace.
func (p proc) stop(grace time.Duration) {
	if !p.alive() {
		return
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	_ = syscall.Kill(p.Pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for p.alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	for i := 0; p.alive() && i < 50; i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *state) proc(name string) (proc, bool) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return proc{}, false
}

// logTails returns the end of the named components' logs as an error, for a failed start.
func (s *state) logTails(l layout, names ...string) error {
	var b strings.Builder
	for _, n := range names {
		p := l.path("logs", n+".log")
		fmt.Fprintf(&b, "last lines of %s:\n%s\n", p, tail(p, 25))
	}
	return errors.New(b.String())
}

func tail(path string, n int) string { return kube.Tail(path, n) }
