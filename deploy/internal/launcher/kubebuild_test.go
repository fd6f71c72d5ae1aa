package launcher

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kubebuild"
)

// kubeRoot is a repository root offering two Kubernetes versions, nothing built.
func kubeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for dir, v := range map[string]string{"v1.33": "v1.33.13", "v1.32": "v1.32.9"} {
		mod := "module example/tools/k8s/" + dir + "\n\ngo 1.26\n\nrequire (\n\tk8s.io/kubernetes " + v + "\n\tk8s.io/api v0.0.0\n)\n"
		if err := os.MkdirAll(filepath.Join(root, "tools", "k8s", dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "tools", "k8s", dir, "go.mod"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// makesAll is shell that creates every binary kubeRoot's versions need in ./bin.
const makesAll = `mkdir -p bin
for f in kube-apiserver-v1.33.13 kube-controller-manager-v1.33.13 kube-apiserver-v1.32.9 kube-controller-manager-v1.32.9 kwok; do
	printf '#!/bin/sh\n' > bin/$f && chmod +x bin/$f
done
`

// buildScript is a stand-in for make tools-k8s, run in the root.
func buildScript(t *testing.T, body string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{path}
}

func readStatus(t *testing.T, home string) (kubebuild.Status, bool) {
	t.Helper()
	st, err := kubebuild.Read(kubeBuildStatusPath(home))
	if errors.Is(err, os.ErrNotExist) {
		return kubebuild.Status{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return st, true
}

func waitState(t *testing.T, home, state string) kubebuild.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, ok := readStatus(t, home); ok && st.State == state {
			return st
		} else if time.Now().After(deadline) {
			t.Fatalf("status %+v, want state %s", st, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKubeVersionsFromTheMakefilePins(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := findRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := kubeVersions(root)
	if err != nil || len(vs) != 2 || !strings.HasPrefix(vs[0], "v1.33.") || !strings.HasPrefix(vs[1], "v1.32.") {
		t.Fatalf("versions %v (%v), want v1.33.x then v1.32.x", vs, err)
	}
	if vs, err := kubeVersions(kubeRoot(t)); err != nil || !slices.Equal(vs, []string{"v1.33.13", "v1.32.9"}) {
		t.Fatalf("versions %v (%v)", vs, err)
	}
}

// TestKubeBuildGoesFromBuildingToDone: a missing binary starts the build in the background;
// the status file says building (with what kaas shows waiting clusters), then done; a later
// start with everything built leaves no status file.
func TestKubeBuildGoesFromBuildingToDone(t *testing.T) {
	root, home := kubeRoot(t), t.TempDir()
	said := &sayings{}
	say := said.say
	stop, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "sleep 1\n"+makesAll), say)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	st, ok := readStatus(t, home)
	if !ok || st.State != "building" || st.PID <= 0 || !slices.Equal(st.Versions, []string{"v1.33.13", "v1.32.9"}) ||
		st.EstimateSeconds != 840 || st.Log != filepath.Join(home, "logs", "tools-k8s.log") || time.Since(st.Started) > time.Minute {
		t.Fatalf("status while building: %+v", st)
	}
	want := "kaas: building Kubernetes v1.33.13, v1.32.9 binaries in the background (first run, ~14 min; log " +
		st.Log + "); clusters created meanwhile wait"
	if len(said.all()) == 0 || said.all()[0] != want {
		t.Fatalf("said %q, want %q", said.all(), want)
	}
	if st := waitState(t, home, "done"); st.Error != "" {
		t.Fatalf("done with an error: %+v", st)
	}
	stop()
	stop2, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "exit 3\n"), say)
	if err != nil {
		t.Fatal(err)
	}
	stop2()
	if st, ok := readStatus(t, home); ok {
		t.Fatalf("everything built, yet a status file: %+v", st)
	}
}

// TestKubeBuildFailsWithTheLastLogLine: a failing build says why in one line.
func TestKubeBuildFailsWithTheLastLogLine(t *testing.T) {
	root, home := kubeRoot(t), t.TempDir()
	said := &sayings{}
	say := said.say
	stop, err := startKubeBuild(Config{Root: root, Home: home},
		buildScript(t, "echo compiling\nsleep 0.5\necho 'go: k8s.io/kubernetes@v1.33.13: no space left on device' >&2\nexit 1\n"), say)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if st, _ := readStatus(t, home); st.State != "building" {
		t.Fatalf("status %+v, want building first", st)
	}
	st := waitState(t, home, "failed")
	if st.Error != "exit status 1: go: k8s.io/kubernetes@v1.33.13: no space left on device" {
		t.Errorf("error %q", st.Error)
	}
	stop() // waits for the line below
	if !strings.Contains(strings.Join(said.all(), "\n"), "building the Kubernetes binaries failed") {
		t.Errorf("said %q", said.all())
	}
	// A build that ends well without the binaries is a failure too.
	stop, err = startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "exit 0\n"), say)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if st := waitState(t, home, "failed"); !strings.Contains(st.Error, "the build ended without kube-apiserver-v1.33.13") {
		t.Errorf("error %q", st.Error)
	}
}

// TestKubeBuildEndsWithTheLauncher: stop kills the whole process group (a grandchild too)
// and the status file no longer says building.
func TestKubeBuildEndsWithTheLauncher(t *testing.T) {
	root, home := kubeRoot(t), t.TempDir()
	say := (&sayings{}).say
	stop, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "sleep 300 &\nwait\n"), say)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := readStatus(t, home)
	time.Sleep(200 * time.Millisecond) // let the shell start its grandchild
	stop()
	// The grandchild, reparented, may linger a moment as a zombie for its new parent to reap.
	for deadline := time.Now().Add(5 * time.Second); len(groupProcs(st.PID)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the build's process group %d still runs %v", st.PID, groupProcs(st.PID))
		}
	}
	if st, _ := readStatus(t, home); st.State != "failed" || !strings.Contains(st.Error, "stopped with the launcher") {
		t.Fatalf("status after stop: %+v", st)
	}
}

// TestKubeBuildStopsALeftoverOfAKilledLauncher: a status file still saying building names a
// group a killed launcher left; the next launcher kills it when it carries this home's
// marker, and leaves a group that does not (a reused PID) alone.
func TestKubeBuildStopsALeftoverOfAKilledLauncher(t *testing.T) {
	root, home := kubeRoot(t), t.TempDir()
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	leftover := func(pid int) {
		if err := os.MkdirAll(kaasStateDir(home), 0o700); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(kubebuild.Status{State: "building", PID: pid})
		if err := os.WriteFile(kubeBuildStatusPath(home), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-c", makesAll)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	say := (&sayings{}).say

	stranger := start()
	leftover(stranger.Process.Pid)
	if _, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "exit 3\n"), say); err != nil {
		t.Fatal(err)
	}
	if err := stranger.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a process group without the marker was killed: %v", err)
	}

	ours := start(kubeBuildMarker(home))
	leftover(ours.Process.Pid)
	if _, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "exit 3\n"), say); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ours.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the leftover build exited on its own")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover build of a killed launcher is still running")
	}
	if _, ok := readStatus(t, home); ok {
		t.Fatal("everything is built: the status file should be gone")
	}
}

// TestKubeBuildWaitsForAnotherMake: a make tools-k8s already running in the root builds the
// same files: the launcher waits for it instead of starting a second build.
func TestKubeBuildWaitsForAnotherMake(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	root, home := kubeRoot(t), t.TempDir()
	makefile := "tools-k8s:\n\tsleep 1\n\tsh build-all.sh\n"
	if err := os.WriteFile(filepath.Join(root, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "build-all.sh"), []byte(makesAll), 0o644); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("make", "tools-k8s")
	other.Dir = root
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = other.Wait() }()
	// Until the child has exec'd make, /proc shows it as this test binary: the launcher would
	// (rightly) see no other build. Start once it is make.
	for deadline := time.Now().Add(10 * time.Second); otherKubeBuild(root) != other.Process.Pid; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("make tools-k8s (pid %d) never showed in /proc as a make in %s", other.Process.Pid, root)
		}
	}
	said := &sayings{}
	say := said.say
	stop, err := startKubeBuild(Config{Root: root, Home: home}, buildScript(t, "exit 7\n"), say)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if st, _ := readStatus(t, home); st.State != "building" || st.PID != other.Process.Pid {
		t.Fatalf("status %+v, want building by pid %d", st, other.Process.Pid)
	}
	waitState(t, home, "done")
	if !strings.Contains(said.all()[0], "already building") {
		t.Errorf("said %q", said.all())
	}
}

// TestKubeBuildThatCannotStartIsNoReasonToStop: without make the launcher goes on; kaas reads
// why from the status file and refuses clusters naming it.
func TestKubeBuildThatCannotStartIsNoReasonToStop(t *testing.T) {
	root, home := kubeRoot(t), t.TempDir()
	said := &sayings{}
	stop, err := startKubeBuild(Config{Root: root, Home: home}, []string{filepath.Join(t.TempDir(), "make")}, said.say)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	st, ok := readStatus(t, home)
	if !ok || st.State != "failed" || !strings.Contains(st.Error, "start the Kubernetes build") {
		t.Fatalf("status %+v", st)
	}
	if got := said.all(); len(got) != 1 || !strings.Contains(got[0], "its clusters are refused until make tools-k8s has built kube-apiserver-v1.33.13") {
		t.Fatalf("said %q", got)
	}
}
