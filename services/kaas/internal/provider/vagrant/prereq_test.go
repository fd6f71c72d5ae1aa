package vagrant

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/kubebuild"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

const testVersion = "v1.33.13"

// prereqHost is a host for Prerequisites: a bin directory, an etcd binary and a build status
// file, all in a temporary directory; every binary present at first.
type prereqHost struct {
	t                      *testing.T
	bin, etcd, status, log string
	now                    time.Time
	noCurl                 bool
}

func newPrereqHost(t *testing.T) *prereqHost {
	dir := t.TempDir()
	h := &prereqHost{t: t, bin: filepath.Join(dir, "bin"), etcd: filepath.Join(dir, "usr-bin", "etcd"),
		status: filepath.Join(dir, "kube-build.json"), log: filepath.Join(dir, "logs", "tools-k8s.log"),
		now: time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)}
	for _, n := range []string{"kube-apiserver-" + testVersion, "kube-controller-manager-" + testVersion, "kwok"} {
		h.put(filepath.Join(h.bin, n), 0o755)
	}
	h.put(h.etcd, 0o755)
	return h
}

func (h *prereqHost) put(path string, mode os.FileMode) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		h.t.Fatal(err)
	}
}

func (h *prereqHost) remove(names ...string) {
	h.t.Helper()
	for _, n := range names {
		if err := os.Remove(filepath.Join(h.bin, n)); err != nil {
			h.t.Fatal(err)
		}
	}
}

// build writes the status file as the launcher does.
func (h *prereqHost) build(st kubebuild.Status) {
	h.t.Helper()
	if st.Log == "" {
		st.Log = h.log
	}
	data, err := json.Marshal(st)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.status, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *prereqHost) prereqs() Prerequisites {
	return Prerequisites{KubeBinDir: h.bin, Etcd: h.etcd, BuildStatus: h.status,
		now: func() time.Time { return h.now },
		lookPath: func(name string) (string, error) {
			if h.noCurl {
				return "", exec.ErrNotFound
			}
			return "/usr/bin/" + name, nil
		}}
}

// deadPID is the pid of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestPrerequisites(t *testing.T) {
	dead := deadPID(t)
	cases := []struct {
		name   string
		setup  func(h *prereqHost)
		worker bool
		// wait and fail hold what the message must contain; both empty: ready.
		wait, fail []string
	}{
		{name: "everything there", setup: func(*prereqHost) {}},
		{name: "everything there beside a failed build", setup: func(h *prereqHost) {
			h.build(kubebuild.Status{State: "failed", Error: "boom", PID: dead})
		}},
		{name: "etcd missing", setup: func(h *prereqHost) { _ = os.Remove(h.etcd) },
			fail: []string{"/usr-bin/etcd is missing: install Debian's etcd-server"}},
		{name: "etcd missing while the kube binaries are being built", setup: func(h *prereqHost) {
			_ = os.Remove(h.etcd)
			h.remove("kwok")
			h.build(kubebuild.Status{State: "building", PID: os.Getpid(), Started: h.now, EstimateSeconds: 840})
		}, fail: []string{"etcd is missing: install Debian's etcd-server"}},
		{name: "a worker needs no etcd", setup: func(h *prereqHost) { _ = os.Remove(h.etcd) }, worker: true},
		{name: "curl missing", setup: func(h *prereqHost) { h.noCurl = true }, fail: []string{"curl is missing: install Debian's curl"}},
		{name: "etcd not executable", setup: func(h *prereqHost) { h.put(h.etcd, 0o644) }, fail: []string{"etcd is missing"}},
		{name: "kube binary missing, no build", setup: func(h *prereqHost) { h.remove("kube-apiserver-" + testVersion) },
			fail: []string{"kube-apiserver-v1.33.13 is missing in ", "/bin: run make tools-k8s"}},
		{name: "kube binaries missing, no build", setup: func(h *prereqHost) { h.remove("kube-controller-manager-"+testVersion, "kwok") },
			fail: []string{"kube-controller-manager-v1.33.13 and kwok are missing in "}},
		{name: "a worker needs kwok only", setup: func(h *prereqHost) { h.remove("kube-apiserver-" + testVersion) }, worker: true},
		{name: "building, live pid", setup: func(h *prereqHost) {
			h.remove("kube-apiserver-"+testVersion, "kube-controller-manager-"+testVersion, "kwok")
			h.build(kubebuild.Status{State: "building", Versions: []string{"v1.32.13", testVersion}, PID: os.Getpid(),
				Started: h.now.Add(-90 * time.Second), EstimateSeconds: 840})
		}, wait: []string{"preparing Kubernetes v1.33.13 binaries, first run, ~13 min left (log: ", "tools-k8s.log)"}},
		{name: "building, no version list", setup: func(h *prereqHost) {
			h.remove("kube-apiserver-" + testVersion)
			h.build(kubebuild.Status{State: "building", PID: os.Getpid(), Started: h.now, EstimateSeconds: 61})
		}, wait: []string{"~2 min left"}},
		{name: "building past its estimate", setup: func(h *prereqHost) {
			h.remove("kwok")
			h.build(kubebuild.Status{State: "building", PID: os.Getpid(), Started: h.now.Add(-20 * time.Minute), EstimateSeconds: 840})
		}, wait: []string{"first run, any moment now (log: "}},
		{name: "building, dead pid", setup: func(h *prereqHost) {
			h.remove("kube-apiserver-" + testVersion)
			h.build(kubebuild.Status{State: "building", PID: dead, Started: h.now, EstimateSeconds: 840})
		}, fail: []string{"kube-apiserver-v1.33.13 is missing", "ended without finishing", "tools-k8s.log", "run make tools-k8s"}},
		{name: "building, no pid", setup: func(h *prereqHost) {
			h.remove("kwok")
			h.build(kubebuild.Status{State: "building", Started: h.now, EstimateSeconds: 840})
		}, fail: []string{"kwok is missing", "ended without finishing"}},
		{name: "building other versions", setup: func(h *prereqHost) {
			h.remove("kube-apiserver-" + testVersion)
			h.build(kubebuild.Status{State: "building", Versions: []string{"v1.32.13"}, PID: os.Getpid(), Started: h.now, EstimateSeconds: 840})
		}, fail: []string{"the build in progress makes v1.32.13 only"}},
		{name: "build failed", setup: func(h *prereqHost) {
			h.remove("kube-apiserver-" + testVersion)
			h.build(kubebuild.Status{State: "failed", PID: dead, Error: "exit status 2: go: module lookup disabled\nsecond line"})
		}, fail: []string{"building the Kubernetes binaries failed (exit status 2: go: module lookup disabled; log: ", "tools-k8s.log); run make tools-k8s"}},
		{name: "build done without the binary", setup: func(h *prereqHost) {
			h.remove("kube-controller-manager-" + testVersion)
			h.build(kubebuild.Status{State: "done", PID: dead})
		}, fail: []string{"kube-controller-manager-v1.33.13 is missing", "finished without it"}},
		{name: "unreadable status", setup: func(h *prereqHost) {
			h.remove("kwok")
			if err := os.WriteFile(h.status, []byte(`{"state":`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, fail: []string{"kwok is missing", "cannot be read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPrereqHost(t)
			tc.setup(h)
			wait, err := h.prereqs().Check(testVersion, !tc.worker)
			switch {
			case len(tc.fail) > 0:
				if err == nil {
					t.Fatalf("no error (wait %q), want %q", wait, tc.fail)
				}
				assertHas(t, err.Error(), tc.fail)
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("the error is not one line: %q", err)
				}
			case len(tc.wait) > 0:
				if err != nil {
					t.Fatal(err)
				}
				assertHas(t, wait, tc.wait)
			default:
				if err != nil || wait != "" {
					t.Fatalf("%q %v, want ready", wait, err)
				}
			}
		})
	}
}

func assertHas(t *testing.T, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%q does not say %q", got, w)
		}
	}
}

// TestProvisionWaitsForTheBuild: a machine whose binaries are being built waits (Pending,
// with the build's message) and one whose binaries nothing will bring fails, naming what is
// missing and the build log — both without asking vagrant-server anything (the provider
// has no client here: a call would panic).
func TestProvisionWaitsForTheBuild(t *testing.T) {
	h := newPrereqHost(t)
	p, err := New(nil, Options{KubeBinDir: h.bin, Etcd: h.etcd, KubeBuildStatus: h.status})
	if err != nil {
		t.Fatal(err)
	}
	p.pre = h.prereqs()
	reg, err := provider.NewRegistry(Name, p)
	if err != nil {
		t.Fatal(err)
	}
	m := provider.Machine{ClusterUID: "u", Cluster: "c", Name: "c-control-plane-1", Role: cluster.RoleControlPlane}
	b := provider.Bootstrap{Version: testVersion, Init: true}
	h.remove("kube-apiserver-" + testVersion)
	h.build(kubebuild.Status{State: "building", PID: os.Getpid(), Started: h.now, EstimateSeconds: 840})
	if err := reg.Preflight(Name, testVersion); err != nil {
		t.Fatalf("a build in progress was refused: %v", err)
	}
	o, err := p.Provision(context.Background(), m, b)
	if err != nil || o.Phase != provider.Pending || o.Status != "waiting" || !strings.Contains(o.Message, "preparing Kubernetes v1.33.13 binaries, first run, ~14 min left") {
		t.Fatalf("%+v %v", o, err)
	}
	// Upgrading to a version whose binaries are being built waits at the bootstrap too.
	ready := progress{Target: "t", Address: "10.213.0.2", Step: stepDone, Version: "v1.32.13"}
	if o, err = p.Upgrade(context.Background(), provider.Machine{Name: m.Name, Role: m.Role, State: ready.bytes()}, b); err != nil ||
		o.Phase != provider.Pending || !strings.Contains(o.Message, "preparing Kubernetes") || readProgress(o.State).Step != stepBootstrap {
		t.Fatalf("upgrade: %+v %v", o, err)
	}

	h.build(kubebuild.Status{State: "failed", PID: deadPID(t), Error: "make: *** [tools-k8s] Error 1"})
	err = reg.Preflight(Name, testVersion)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver-v1.33.13 is missing") {
		t.Fatalf("preflight after the build failed: %v", err)
	}
	o, err = p.Provision(context.Background(), m, b)
	if err != nil || o.Phase != provider.Failed || !strings.Contains(o.Message, "kube-apiserver-v1.33.13 is missing") ||
		!strings.Contains(o.Message, h.log) {
		t.Fatalf("%+v %v", o, err)
	}
}

// TestAZombieIsNotAlive: a build that exited but was not reaped yet is not running.
func TestAZombieIsNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	stat := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat"
	for i := 0; ; i++ {
		data, err := os.ReadFile(stat)
		if err != nil {
			t.Skip("no procfs")
		}
		if strings.Contains(string(data), ") Z ") {
			break
		}
		if i > 500 {
			t.Fatalf("the child did not exit: %s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if alive(cmd.Process.Pid) {
		t.Fatal("a zombie counts as alive")
	}
	if !alive(os.Getpid()) {
		t.Fatal("this process counts as dead")
	}
}
