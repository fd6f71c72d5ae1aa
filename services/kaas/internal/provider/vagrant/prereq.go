package vagrant

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/kubebuild"
)

// Prerequisites are what a machine's bootstrap runs, checked on this host (netns machines
// share its filesystem): etcd and the Kubernetes binaries of the version, kwok and curl. A
// binary the launcher is still building is waited for; anything else missing is an
// error that names it and says how to get it.
type Prerequisites struct {
	// KubeBinDir holds kube-apiserver-<v>, kube-controller-manager-<v> and kwok.
	KubeBinDir string
	// Etcd is the etcd binary.
	Etcd string
	// BuildStatus is the launcher's status file of a build of the binaries; "" when none.
	BuildStatus string

	lookPath func(string) (string, error) // exec.LookPath; tests replace it
	now      func() time.Time
}

// Check says whether machines of version in the given role can be bootstrapped: "" and nil
// when everything is there; a message saying what they wait for while a build in progress
// will bring what is missing; otherwise an error naming what is missing, one line.
func (p Prerequisites) Check(version string, controlPlane bool) (wait string, err error) {
	lookPath := p.lookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if controlPlane && !kubebuild.Executable(p.Etcd) {
		return "", fmt.Errorf("%s is missing: install Debian's etcd-server (apt-get install etcd-server)", p.Etcd)
	}
	if _, err := lookPath("curl"); err != nil {
		return "", errors.New("curl is missing: install Debian's curl (apt-get install curl)")
	}
	names := []string{kubebuild.Kwok}
	if controlPlane {
		names = append(kubebuild.ControlPlane(version), kubebuild.Kwok)
	}
	missing := kubebuild.Missing(p.KubeBinDir, names...)
	if len(missing) == 0 {
		return "", nil
	}
	what := fmt.Sprintf("%s %s missing in %s", andList(missing), isAre(len(missing)), p.KubeBinDir)
	st, err := p.readBuild()
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: run make tools-k8s (the build status %s cannot be read: %v)", what, p.BuildStatus, err)
	case st == nil:
		return "", fmt.Errorf("%s: run make tools-k8s", what)
	case st.State == kubebuild.Failed:
		return "", fmt.Errorf("%s: building the Kubernetes binaries failed (%s; log: %s); run make tools-k8s", what, oneLine(st.Error), st.Log)
	case st.State == kubebuild.Done:
		return "", fmt.Errorf("%s: the build of the Kubernetes binaries finished without it (log: %s); run make tools-k8s", what, st.Log)
	case st.State != kubebuild.Building:
		return "", fmt.Errorf("%s: run make tools-k8s (the build status %s says %q)", what, p.BuildStatus, oneLine(st.State))
	case !alive(st.PID):
		return "", fmt.Errorf("%s: the build of the Kubernetes binaries (pid %d) ended without finishing (log: %s); run make tools-k8s", what, st.PID, st.Log)
	case len(st.Versions) > 0 && !slices.Contains(st.Versions, version) && slices.ContainsFunc(missing, func(n string) bool { return n != kubebuild.Kwok }):
		return "", fmt.Errorf("%s: the build in progress makes %s only; run make tools-k8s", what, strings.Join(st.Versions, ", "))
	}
	return fmt.Sprintf("preparing Kubernetes %s binaries, first run, %s (log: %s)", version, p.left(st), st.Log), nil
}

// readBuild reads the build status file: nil when there is none.
func (p Prerequisites) readBuild() (*kubebuild.Status, error) {
	if p.BuildStatus == "" {
		return nil, nil
	}
	st, err := kubebuild.Read(p.BuildStatus)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// left is the build's remaining time in whole minutes (rounded up), never negative.
func (p Prerequisites) left(st *kubebuild.Status) string {
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	rest := st.Started.Add(time.Duration(st.EstimateSeconds) * time.Second).Sub(now())
	if rest <= 0 {
		return "any moment now"
	}
	return fmt.Sprintf("~%d min left", int(math.Ceil(rest.Minutes())))
}

// alive reports whether process pid exists and has not exited (a zombie has).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: kill's answer stands
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, so read after the last ')'.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) == 0 || (f[0] != "Z" && f[0] != "X")
}

// andList joins names as "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// oneLine keeps the first line of s, bounded, for a one-line message.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return input.Truncate(s, 200)
}
