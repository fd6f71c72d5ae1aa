package app_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// TestLocalClustersNeedTheirBinaries drives the vagrant provider's prerequisites through the
// API: a missing binary nobody builds refuses CreateCluster (FailedPrecondition naming it,
// nothing recorded); while the launcher's build runs, a cluster is accepted and waits with a
// message saying so, and goes on by itself once the binaries exist; a build that fails turns
// a waiting cluster ERROR naming the binary and the build log. No vagrant-server is needed:
// nothing reaches it before the binaries are there (afterwards the provider is unreachable,
// which the status reports as retries).
func TestLocalClustersNeedTheirBinaries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	dir := t.TempDir()
	bin, etcd := filepath.Join(dir, "bin"), filepath.Join(dir, "etcd")
	buildStatus, buildLog := filepath.Join(dir, "kube-build.json"), filepath.Join(dir, "tools-k8s.log")
	apiserver := filepath.Join(bin, "kube-apiserver-v1.33.13")
	executable := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(bin, "kube-controller-manager-v1.33.13"), filepath.Join(bin, "kwok")} {
		executable(p)
	}
	build := func(state string, pid int) {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"state": state, "versions": []string{"v1.33.13"}, "started": time.Now().UTC(),
			"estimate_seconds": 840, "log": buildLog, "pid": pid, "error": "make: *** [tools-k8s] Error 2"})
		if err := os.WriteFile(buildStatus, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := e.config(t, func(c *app.Config) {
		c.Provider = "vagrant"
		c.Vagrant.Addr, c.Vagrant.Token, c.Vagrant.Wait = "127.0.0.1:1", "unused-token", time.Second
		c.Vagrant.KubeBinDir, c.Vagrant.Etcd, c.Vagrant.KubeBuild = bin, etcd, buildStatus
	})
	c := e.start(t, cfg).client
	ctx := e.ctx(t)
	create := func(name string) error {
		_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.33.13",
			ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "w", Count: 1}}})
		return err
	}
	refused := func(name string, says ...string) {
		t.Helper()
		before := snapshot(t, e)
		err := create(name)
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("create %s: %v, want FailedPrecondition", name, err)
		}
		for _, s := range says {
			if !strings.Contains(status.Convert(err).Message(), s) {
				t.Fatalf("create %s: %q does not say %q", name, status.Convert(err).Message(), s)
			}
		}
		if after := snapshot(t, e); after != before {
			t.Fatalf("a refused create changed the database:\n%s\n→\n%s", before, after)
		}
	}

	refused(clusterName("noetcd"), etcd+" is missing: install Debian's etcd-server")
	executable(etcd)
	refused(clusterName("nobuild"), "kube-apiserver-v1.33.13 is missing in "+bin+": run make tools-k8s")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	build("building", dead.Process.Pid)
	refused(clusterName("deadbuild"), "ended without finishing", buildLog)

	// A build in progress: accepted, waiting with the build's message and no retries.
	build("building", os.Getpid())
	waits := clusterName("waits")
	if err := create(waits); err != nil {
		t.Fatal(err)
	}
	got := e.waitStatus(t, c, waits, kaaspb.ClusterStatus_PROVISIONING, time.Minute,
		"preparing Kubernetes v1.33.13 binaries, first run, ~14 min left (log: "+buildLog+")")
	time.Sleep(time.Second) // several passes
	got = e.waitStatus(t, c, waits, kaaspb.ClusterStatus_PROVISIONING, time.Minute, "preparing Kubernetes")
	if strings.Contains(got.GetStatusMessage(), "retrying") {
		t.Fatalf("waiting for the build counted as failed attempts: %s", got.GetStatusMessage())
	}

	// The binaries are there: the waiting cluster goes on by itself, to the vagrant-server
	// this test does not run.
	executable(apiserver)
	// Reaching ERROR takes the reconciler's retries with backoff: a generous bound (no timing).
	e.waitStatus(t, c, waits, kaaspb.ClusterStatus_ERROR, 3*time.Minute, "cannot reach the vagrant provider")

	// Another build, which fails: the cluster waiting for it fails at once, naming the binary
	// and the log.
	if err := os.Remove(apiserver); err != nil {
		t.Fatal(err)
	}
	build("building", os.Getpid())
	fails := clusterName("fails")
	if err := create(fails); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, fails, kaaspb.ClusterStatus_PROVISIONING, time.Minute, "preparing Kubernetes")
	build("failed", dead.Process.Pid)
	e.waitStatus(t, c, fails, kaaspb.ClusterStatus_ERROR, 3*time.Minute,
		"kube-apiserver-v1.33.13 is missing in "+bin+": building the Kubernetes binaries failed (make: *** [tools-k8s] Error 2; log: "+buildLog+")")
	refused(clusterName("failedbuild"), "building the Kubernetes binaries failed")
}
