package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kubebuild"
)

// kubeBuildEstimate is how long `make tools-k8s` takes cold on a 2-core machine (issue #20:
// 14 min); kaas tells waiting clusters how much of it is left.
const kubeBuildEstimate = 14 * time.Minute

// kubeBuildStatusPath is where the status file lives (absent when nothing is built).
func kubeBuildStatusPath(home string) string {
	return filepath.Join(kaasStateDir(home), "kube-build.json")
}

// kubeBuildLogPath is the build's log: tail -f it to watch the first run.
func kubeBuildLogPath(home string) string { return filepath.Join(home, "logs", "tools-k8s.log") }

// kubeBinDir is where make tools-k8s puts the binaries, and where kaas looks for them.
func kubeBinDir(root string) string { return filepath.Join(root, "bin") }

// kubeBuildMarker is set in the build's environment: a later launcher on the same home finds
// the processes of a build a killed launcher left behind by it, and stops them first.
func kubeBuildMarker(home string) string { return "PLINTH_KUBE_BUILD_HOME=" + home }

// kubeVersions reads the Kubernetes versions `make tools-k8s` builds from the lines the
// Makefile reads (k8s.io/kubernetes in tools/k8s/v1.NN/go.mod), newest first.
func kubeVersions(root string) ([]string, error) {
	mods, err := filepath.Glob(filepath.Join(root, "tools", "k8s", "v1.*", "go.mod"))
	if err != nil {
		return nil, err
	}
	var versions []string
	for _, mod := range slices.Backward(mods) {
		data, err := os.ReadFile(mod)
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(data)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/kubernetes" {
				versions = append(versions, f[1])
				break
			}
		}
	}
	return versions, nil
}

// missingKubeBinaries lists what kaas's local provider lacks in binDir for versions, and the
// versions concerned.
func missingKubeBinaries(binDir string, versions []string) (missing, concerned []string) {
	if len(versions) == 0 {
		return nil, nil // a checkout without tools/k8s offers no local clusters to build for
	}
	for _, v := range versions {
		if absent := kubebuild.Missing(binDir, kubebuild.ControlPlane(v)...); len(absent) > 0 {
			missing = append(missing, absent...)
			concerned = append(concerned, v)
		}
	}
	return append(missing, kubebuild.Missing(binDir, kubebuild.Kwok)...), concerned
}

// kubeBuild is the background build of the binaries kaas's local provider needs: the
// launcher's own process group, or a make already building them that the launcher waits for.
type kubeBuild struct {
	home, binDir string
	versions     []string
	status       kubebuild.Status
	say          func(string, ...any)
	// end waits until the build ends: the child's Wait, or a poll of another make's pid.
	end      func() error
	own      bool          // the launcher started it: stop kills its group
	quit     chan struct{} // closed by stop: a poll of another make ends
	done     chan struct{} // closed once the build ended and the status file says how
	stopping atomic.Bool
}

// startKubeBuild starts command (make -C ROOT tools-kaas: the one pinned build) in the
// background, in a process group of its own, when a binary kaas's local provider needs is
// missing from ROOT/bin: its output goes to HOME/logs/tools-k8s.log, its progress to the
// status file kaas reads. When a make is already building them in ROOT it waits for that one
// instead. stop ends the build (the whole group) and waits; the next launcher starts it
// again. Nothing missing: no build, no status file, and stop does nothing.
func startKubeBuild(c Config, command []string, say func(string, ...any)) (stop func(), err error) {
	statusPath := kubeBuildStatusPath(c.Home)
	stopLeftover(c.Home, statusPath)
	versions, err := kubeVersions(c.Root)
	if err != nil {
		return nil, fmt.Errorf("read the Kubernetes versions kaas offers: %w", err)
	}
	missing, concerned := missingKubeBinaries(kubeBinDir(c.Root), versions)
	if len(missing) == 0 {
		if err := os.Remove(statusPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return func() {}, nil
	}
	if err := os.MkdirAll(kaasStateDir(c.Home), 0o700); err != nil {
		return nil, err
	}
	b := &kubeBuild{home: c.Home, binDir: kubeBinDir(c.Root), versions: versions, say: say,
		quit: make(chan struct{}), done: make(chan struct{})}
	b.status = kubebuild.Status{State: kubebuild.Building, Versions: concerned, Started: time.Now().UTC().Truncate(time.Second),
		EstimateSeconds: int(kubeBuildEstimate.Seconds())}
	what := strings.Join(concerned, ", ")
	if what == "" {
		what = kubebuild.Kwok
	}
	if pid := otherKubeBuild(c.Root); pid > 0 {
		b.status.PID, b.status.Log = pid, fmt.Sprintf("the output of make, pid %d", pid)
		b.end = func() error { return b.poll(pid) }
		say("kaas: a make (pid %d) is already building the Kubernetes %s binaries here; clusters created meanwhile wait for it", pid, what)
	} else {
		cmd, err := startBuildCommand(c, command)
		if err != nil {
			// kaas runs without the binaries: it refuses clusters with this reason.
			b.status.State, b.status.Error, b.status.Log = kubebuild.Failed, err.Error(), kubeBuildLogPath(c.Home)
			say("kaas: %v; its clusters are refused until make tools-k8s has built %s", err, strings.Join(missing, ", "))
			return func() {}, b.write()
		}
		b.own, b.end = true, cmd.Wait
		b.status.PID, b.status.Log = cmd.Process.Pid, kubeBuildLogPath(c.Home)
		say("kaas: building Kubernetes %s binaries in the background (first run, ~%d min; log %s); clusters created meanwhile wait",
			what, int(kubeBuildEstimate.Minutes()), b.status.Log)
	}
	if err := b.write(); err != nil {
		if b.own {
			_ = syscall.Kill(-b.status.PID, syscall.SIGKILL)
			_ = b.end()
		}
		return nil, err
	}
	go b.wait()
	return b.stop, nil
}

// startBuildCommand starts command in ROOT in a process group of its own, with this home's
// marker in its environment and its output in the build log.
func startBuildCommand(c Config, command []string) (*exec.Cmd, error) {
	logPath := kubeBuildLogPath(c.Home)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create the build log: %w", err)
	}
	defer log.Close() // the child holds its own descriptor
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir = c.Root
	cmd.Env = append(os.Environ(), kubeBuildMarker(c.Home))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the Kubernetes build (%s): %w", strings.Join(command, " "), err)
	}
	return cmd, nil
}

// poll waits until process pid is gone, or stop.
func (b *kubeBuild) poll(pid int) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-b.quit:
			return nil
		case <-tick.C:
		}
	}
	return nil
}

// wait records how the build ended.
func (b *kubeBuild) wait() {
	defer close(b.done)
	err := b.end()
	took := time.Since(b.status.Started).Round(time.Second)
	st := &b.status
	missing, _ := missingKubeBinaries(b.binDir, b.versions)
	switch {
	case b.stopping.Load() && !b.own:
		st.State, st.Error = kubebuild.Failed, "the launcher stopped waiting for it; the next start looks again"
	case b.stopping.Load():
		st.State, st.Error = kubebuild.Failed, "stopped with the launcher before it finished; the next start builds again"
	case err != nil:
		st.State, st.Error = kubebuild.Failed, fmt.Sprintf("%v: %s", err, lastLine(st.Log))
	case len(missing) > 0:
		st.State, st.Error = kubebuild.Failed, fmt.Sprintf("the build ended without %s", strings.Join(missing, ", "))
	default:
		st.State = kubebuild.Done
	}
	if werr := b.write(); werr != nil {
		b.say("kaas: %v", werr)
	}
	if st.State == kubebuild.Done {
		b.say("kaas: Kubernetes binaries built in %s; clusters go on", took)
	} else if !b.stopping.Load() {
		b.say("kaas: building the Kubernetes binaries failed after %s (%s); log %s; retry with make tools-k8s", took, st.Error, st.Log)
	}
}

func (b *kubeBuild) write() error {
	return writeHomeJSON(kaasStateDir(b.home), filepath.Base(kubeBuildStatusPath(b.home)), b.status)
}

// stop ends a build still running: SIGTERM to its group, SIGKILL after 5 s (a make the
// launcher did not start is only no longer waited for).
func (b *kubeBuild) stop() {
	select {
	case <-b.done:
		return
	default:
	}
	b.stopping.Store(true)
	close(b.quit)
	if !b.own {
		<-b.done
		return
	}
	_ = syscall.Kill(-b.status.PID, syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.status.PID, syscall.SIGKILL)
		<-b.done
	}
}

// lastLine is the last non-empty line of a log, at most 200 bytes: a build's one-line error.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 8<<10 {
		_, _ = f.Seek(-8<<10, 0)
	}
	last := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	return last
}

// kubeBuildCommand is the one pinned build of the Kubernetes binaries: the Makefile's.
func kubeBuildCommand(root string) []string { return []string{"make", "-C", root, "tools-kaas"} }
