package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeMachine has the commands in present; its apt-get (when allowed) makes the commands of
// the packages in brings present, and records each call.
type fakeMachine struct {
	present map[string]bool
	brings  map[string][]string // package → commands it installs
	calls   [][]string
	fail    error
}

func (f *fakeMachine) machine(mayInstall bool) machine {
	m := machine{look: func(cmd string) (string, error) {
		if f.present[cmd] {
			return "/usr/bin/" + cmd, nil
		}
		return "", errors.New("not found")
	}, noInstall: "not root"}
	if mayInstall {
		m.noInstall = ""
		m.install = func(_ context.Context, pkgs ...string) error {
			f.calls = append(f.calls, pkgs)
			if f.fail != nil {
				return f.fail
			}
			for _, p := range pkgs {
				for _, c := range f.brings[p] {
					f.present[c] = true
				}
			}
			return nil
		}
	}
	return m
}

// needySpecs: an optional binary, one that runs without its needs, one that cannot, and two
// binaries sharing a package.
func needySpecs() []Spec {
	needs := func(n ...Need) func(Config) []Need { return func(Config) []Need { return n } }
	return []Spec{
		{Binary: "lvmd-agent", Optional: "it needs root and lvm2", Needs: needs(Need{Command: "lvm", Package: "lvm2", Why: "loop-backed volume group"})},
		{Binary: "kaas", Needs: needs(
			Need{Command: "/usr/bin/etcd", Package: "etcd-server", Why: "its clusters' etcd", Without: "clusters are refused"},
			Need{Command: "curl", Package: "curl", Why: "bootstrap", Without: "clusters are refused"})},
		{Binary: "stats", Needs: needs(Need{Command: "ceph", Package: "ceph-common", Why: "the dev Ceph"})},
		{Binary: "vagrant-runner", Needs: needs(Need{Command: "curl", Package: "curl", Why: "downloads", Without: "no downloads"})},
		{Binary: "auth"},
	}
}

// sayings records the lines a launcher says, from any goroutine.
type sayings struct {
	mu    sync.Mutex
	lines []string
}

func (s *sayings) say(f string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, fmt.Sprintf(f, a...))
}

func (s *sayings) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// saidExactly fails the test unless said holds exactly the lines want.
func saidExactly(t *testing.T, said *sayings, want []string) {
	t.Helper()
	if got := said.all(); !slices.Equal(got, want) {
		t.Fatalf("said\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func (s *sayings) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = nil
}

// TestSettleNeedsInstallsEverythingInOneAptCall: as root with apt-get, every missing
// package of every binary goes into one call, with one line per package naming who needs it.
func TestSettleNeedsInstallsEverythingInOneAptCall(t *testing.T) {
	f := &fakeMachine{present: map[string]bool{}, brings: map[string][]string{
		"lvm2": {"lvm"}, "etcd-server": {"/usr/bin/etcd"}, "curl": {"curl"}, "ceph-common": {"ceph"}}}
	m := f.machine(true)
	said := &sayings{}
	say := said.say
	skip, err := settleNeeds(context.Background(), unmetNeeds(needySpecs(), Config{}, m), m, say)
	if err != nil || len(skip) != 0 {
		t.Fatalf("skip %v, err %v", skip, err)
	}
	if want := [][]string{{"lvm2", "etcd-server", "curl", "ceph-common"}}; !slices.EqualFunc(f.calls, want, slices.Equal) {
		t.Fatalf("apt-get calls %q, want %q", f.calls, want)
	}
	want := []string{
		"installing lvm2 for lvmd-agent (loop-backed volume group): apt-get install -y lvm2",
		"installing etcd-server for kaas (its clusters' etcd): apt-get install -y etcd-server",
		"installing curl for kaas (bootstrap), vagrant-runner (downloads): apt-get install -y curl",
		"installing ceph-common for stats (the dev Ceph): apt-get install -y ceph-common",
	}
	saidExactly(t, said, want)
	// Everything present now: nothing is missing, nothing is said or installed again.
	said.reset()
	if missing := unmetNeeds(needySpecs(), Config{}, m); len(missing) != 0 {
		t.Fatalf("still missing after the install: %+v", missing)
	}
	if skip, err := settleNeeds(context.Background(), nil, m, say); skip != nil || err != nil || len(said.all()) != 0 || len(f.calls) != 1 {
		t.Fatalf("nothing missing: skip %v err %v said %q calls %d", skip, err, said.all(), len(f.calls))
	}
}

// TestSettleNeedsAfterAFailedInstall: what apt-get could not bring skips the optional
// binary, leaves kaas running with a warning, and fails the launch for the one that cannot run.
func TestSettleNeedsAfterAFailedInstall(t *testing.T) {
	f := &fakeMachine{present: map[string]bool{}, fail: errors.New("apt-get install failed (exit status 100)")}
	m := f.machine(true)
	said := &sayings{}
	say := said.say
	skip, err := settleNeeds(context.Background(), unmetNeeds(needySpecs(), Config{}, m), m, say)
	if len(f.calls) != 1 {
		t.Fatalf("apt-get calls %q, want one", f.calls)
	}
	if !errors.Is(skip["lvmd-agent"], ErrSkip) || !strings.Contains(skip["lvmd-agent"].Error(), "lvm is missing (apt-get install lvm2)") {
		t.Errorf("lvmd-agent skip %v", skip["lvmd-agent"])
	}
	if _, skipped := skip["kaas"]; skipped {
		t.Error("kaas runs without etcd and curl (it refuses clusters naming them); it was skipped")
	}
	if err == nil || !strings.Contains(err.Error(), "stats needs ceph (Debian package ceph-common) for the dev Ceph: apt-get could not install it") {
		t.Errorf("err %v", err)
	}
	joined := strings.Join(said.all(), "\n")
	for _, w := range []string{
		"installing lvm2 etcd-server curl ceph-common failed: apt-get install failed (exit status 100)",
		"kaas runs without /usr/bin/etcd, curl: clusters are refused",
		"vagrant-runner runs without curl: no downloads",
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("no line %q in\n%s", w, joined)
		}
	}
}

// TestSettleNeedsWithoutInstallSaysWhatToInstall: not root (or -no-install), nothing is
// installed; each missing need gets the exact line, then one line with everything at once.
func TestSettleNeedsWithoutInstallSaysWhatToInstall(t *testing.T) {
	f := &fakeMachine{present: map[string]bool{"curl": true}}
	m := f.machine(false)
	said := &sayings{}
	say := said.say
	skip, err := settleNeeds(context.Background(), unmetNeeds(needySpecs(), Config{}, m), m, say)
	if len(f.calls) != 0 {
		t.Fatalf("installed %q without being allowed to", f.calls)
	}
	want := []string{
		"lvmd-agent needs lvm (Debian package lvm2): apt-get install lvm2",
		"kaas needs /usr/bin/etcd (Debian package etcd-server): apt-get install etcd-server",
		"stats needs ceph (Debian package ceph-common): apt-get install ceph-common",
		"not installing (not root): apt-get install lvm2 etcd-server ceph-common brings everything; as root, make up installs it",
		"kaas runs without /usr/bin/etcd: clusters are refused",
	}
	saidExactly(t, said, want)
	if !errors.Is(skip["lvmd-agent"], ErrSkip) || len(skip) != 1 {
		t.Errorf("skip %v, want lvmd-agent only", skip)
	}
	if err == nil || !strings.Contains(err.Error(), "stats needs ceph (Debian package ceph-common) for the dev Ceph: apt-get install ceph-common") {
		t.Errorf("err %v", err)
	}
}

// TestSettleNeedsNotRootForReal runs the real decision and the real lookups as a user that
// is not root: a command missing from PATH (and from /usr/sbin, /sbin), and an absolute path
// that does not exist, are named with what to install, and apt-get is never run.
func TestSettleNeedsNotRootForReal(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	m := thisMachine(Config{}, 1000, &aptGet{out: io.Discard})
	if m.install != nil || m.noInstall != "not root" {
		t.Fatalf("a user that is not root may install: %+v", m)
	}
	specs := []Spec{
		{Binary: "lvmd-agent", Optional: "without PLINTH_LVMD_CONFIG it needs root and lvm2",
			Needs: func(Config) []Need { return []Need{{Command: "plinth-no-such-lvm", Package: "lvm2"}} }},
		{Binary: "kaas", Needs: func(Config) []Need {
			return []Need{{Command: "/nonexistent/plinth/etcd", Package: "etcd-server", Without: "clusters are refused"}}
		}},
		{Binary: "ls-user", Needs: func(Config) []Need { return []Need{{Command: "/bin/ls", Package: "coreutils"}} }},
	}
	said := &sayings{}
	say := said.say
	skip, err := settleNeeds(context.Background(), unmetNeeds(specs, Config{}, m), m, say)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lvmd-agent needs plinth-no-such-lvm (Debian package lvm2): apt-get install lvm2",
		"kaas needs /nonexistent/plinth/etcd (Debian package etcd-server): apt-get install etcd-server",
		"not installing (not root): apt-get install lvm2 etcd-server brings everything; as root, make up installs it",
		"kaas runs without /nonexistent/plinth/etcd: clusters are refused",
	}
	saidExactly(t, said, want)
	if got := fmt.Sprint(skip["lvmd-agent"]); got != "skipped: plinth-no-such-lvm is missing (apt-get install lvm2); without PLINTH_LVMD_CONFIG it needs root and lvm2" {
		t.Errorf("skip reason %q", got)
	}
	if m := thisMachine(Config{NoInstall: true}, 0, &aptGet{}); m.install != nil || m.noInstall != "-no-install" {
		t.Errorf("-no-install as root: %+v", m)
	}
}

// TestLookCommandLooksInSbin: a root shell without /usr/sbin and /sbin on PATH still finds
// what Debian keeps there.
func TestLookCommandLooksInSbin(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var inSbin string
	for _, d := range sbinDirs() {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if fi, err := os.Stat(filepath.Join(d, e.Name())); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				inSbin = e.Name()
				break
			}
		}
		if inSbin != "" {
			break
		}
	}
	if inSbin == "" {
		t.Skip("nothing executable in /usr/sbin or /sbin here")
	}
	if _, err := lookCommand(inSbin); err != nil {
		t.Errorf("%s: %v", inSbin, err)
	}
	if _, err := lookCommand("/etc/passwd"); err == nil {
		t.Error("a file that is not executable counts as a command")
	}
	if got := SbinPath("/usr/bin:/sbin"); got != "/usr/bin:/sbin:/usr/sbin" {
		t.Errorf("SbinPath %q", got)
	}
}

// TestStartAllSkipsWhatNeedsSkip: a binary whose needs are missing is left out with its
// reason, before its Prepare runs.
func TestStartAllSkipsWhatNeedsSkip(t *testing.T) {
	prepared := false
	prepare := func(context.Context, Config, map[string]Placement, func(string, ...any)) error {
		prepared = true
		return nil
	}
	placed := []Placement{{Spec: Spec{Binary: "lvmd-agent", Prepare: prepare}, Admin: "127.0.0.1:1"}}
	said := &sayings{}
	say := said.say
	skipped := map[string]error{"lvmd-agent": fmt.Errorf("%w: lvm is missing (apt-get install lvm2)", ErrSkip)}
	children, err := startAll(context.Background(), Config{Home: t.TempDir()}, NewConsole(io.Discard, false, 80), placed, Infra{}, skipped, say)
	if err != nil || len(children) != 0 || prepared {
		t.Fatalf("children %v, err %v, prepared %v", children, err, prepared)
	}
	if want := []string{"lvmd-agent: skipped: lvm is missing (apt-get install lvm2)"}; !slices.Equal(said.all(), want) {
		t.Fatalf("said %q, want %q", said.all(), want)
	}
}

// TestTableNeeds: what the table declares, under make up's defaults.
func TestTableNeeds(t *testing.T) {
	c := Config{Root: t.TempDir()} // no tools/k8s: nothing to build, so no make
	byBinary := map[string][]Need{}
	for _, s := range Table() {
		if s.Needs != nil {
			byBinary[s.Binary] = s.Needs(c)
		}
	}
	commands := func(ns []Need) (out []string) {
		for _, n := range ns {
			out = append(out, n.Command+"="+n.Package)
		}
		return out
	}
	for binary, want := range map[string][]string{
		"lvmd-agent":     {"lvm=lvm2"},
		"kaas":           {"/usr/bin/etcd=etcd-server", "curl=curl"},
		"vagrant-runner": {"ip=iproute2", "runc=runc", "tini=tini"},
	} {
		if got := commands(byBinary[binary]); !slices.Equal(got, want) {
			t.Errorf("%s needs %v, want %v", binary, got, want)
		}
	}
	if ns := lvmdNeeds(Config{LvmdConfig: "/etc/topolvm/lvmd.yaml"}); len(ns) != 0 {
		t.Errorf("with the user's own device classes lvmd-agent needs %v", ns)
	}
	// A missing Kubernetes binary adds make, for its build.
	root := kubeRoot(t)
	if got := commands(kaasNeeds(Config{Root: root})); !slices.Contains(got, "make=make") {
		t.Errorf("kaas needs %v with no Kubernetes binaries built: want make too", got)
	}
}
