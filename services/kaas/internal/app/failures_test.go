package app_test

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

func create(t *testing.T, e *env, c kaaspb.ClusterClient, name, cpType string, pools ...*kaaspb.MachineSpec) {
	t.Helper()
	if _, err := c.CreateCluster(e.ctx(t), &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1, InstanceType: cpType}, WorkerNodePools: pools}); err != nil {
		t.Fatal(err)
	}
}

// clusterInfo is plinth.kaas.v1's view of cluster name.
func clusterInfo(t *testing.T, e *env, k *instance, name string) *kaasv1.ClusterInfo {
	t.Helper()
	r, err := k.info.GetClusterInfo(e.ctx(t), &kaasv1.GetClusterInfoRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetCluster()
}

// poolsOf lists info's pools as name:type:count.
func poolsOf(info *kaasv1.ClusterInfo) string {
	var out []string
	for _, p := range info.GetPools() {
		out = append(out, fmt.Sprintf("%s:%s:%d", p.GetName(), p.GetInstanceType(), p.GetCount()))
	}
	return strings.Join(out, " ")
}

// failGPUs makes every gpu machine's next deployment fail.
func failGPUs(e *env) {
	e.maas.Do(func(ms []*maastest.Machine) {
		for _, m := range ms {
			if m.Tags[0] == "gpu" {
				m.FailDeploy = true
			}
		}
	})
}

func TestMachinesThatFailToDeploy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(4, "standard")
	e.maas.Add(2, "gpu")
	failGPUs(e)
	k := e.start(t, e.config(t))
	c := k.client

	worker := clusterName("badworker")
	create(t, e, c, worker, "", &kaaspb.MachineSpec{Name: "g", Count: 1, InstanceType: "gpu"}, &kaaspb.MachineSpec{Name: "w", Count: 1})
	e.waitStatus(t, c, worker, kaaspb.ClusterStatus_DEGRADED, time.Minute,
		"worker machine "+worker+"-g-1 of pool g failed: MAAS reports Failed deployment: Installation failed")
	cp := clusterName("badcp")
	create(t, e, c, cp, "gpu")
	e.waitStatus(t, c, cp, kaaspb.ClusterStatus_ERROR, time.Minute, "control-plane machine "+cp+"-control-plane-1 failed: MAAS reports Failed deployment")

	// Plinth's view says the same in short, with what to do, and keeps the raw words apart.
	info := clusterInfo(t, e, k, worker)
	if cs := info.GetCause(); cs.GetKind() != "worker_failed" || cs.GetMachine() != worker+"-g-1" ||
		cs.GetSummary() != "Worker machine "+worker+"-g-1 of pool g failed at the maas provider." ||
		!strings.HasPrefix(cs.GetNextStep(), "Scale pool g down") || !strings.Contains(info.GetStatusMessage(), "Installation failed") {
		t.Fatalf("cause %v, status message %q", cs, info.GetStatusMessage())
	}
	if got := poolsOf(info); got != "control-plane:standard:1 g:gpu:1 w:standard:1" {
		t.Fatalf("pools %s", got)
	}
	failed := 0
	for _, m := range info.GetMachines() {
		if m.GetState() == "failed" && m.GetName() == worker+"-g-1" && strings.Contains(m.GetMessage(), "Installation failed") && m.GetProviderId() != "" {
			failed++
		}
	}
	if failed != 1 || len(info.GetMachines()) != 3 {
		t.Fatalf("machines %v", info.GetMachines())
	}
	if cs := clusterInfo(t, e, k, cp).GetCause(); cs.GetKind() != "control_plane_failed" || !strings.Contains(cs.GetNextStep(), "delete the cluster") {
		t.Fatalf("control-plane cause %v", cs)
	}

	// Scaling the failed machine away (failed machines go first) brings the cluster back.
	if _, err := c.ScaleNodePool(e.ctx(t), &kaaspb.ScaleNodePoolMsg{ClusterName: worker, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "g", Count: 0}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, worker, kaaspb.ClusterStatus_RUNNING, time.Minute, "all 2 machines ready")
	info = clusterInfo(t, e, k, worker)
	if info.GetCause() != nil {
		t.Fatalf("a running cluster has a cause: %v", info.GetCause())
	}
	// The timeline: created by the env's user (PROVISIONING), the failure (DEGRADED), the
	// failed machine released by the reconciler after the scale (PROVISIONING: the cluster was
	// never all ready), then RUNNING.
	var steps []string
	for _, s := range info.GetTimeline() {
		steps = append(steps, s.GetStatus().String()+"/"+s.GetActorUsername())
	}
	if got := strings.Join(steps, " "); got != "PROVISIONING/admin DEGRADED/ PROVISIONING/ RUNNING/" {
		t.Fatalf("timeline %s", got)
	}
	for _, n := range []string{worker, cp} {
		if _, err := c.DeleteCluster(e.ctx(t), &kaaspb.DeleteClusterMsg{Name: n}); err != nil {
			t.Fatal(err)
		}
		e.waitGone(t, c, n, time.Minute)
	}
	e.maas.Do(func(ms []*maastest.Machine) {
		for _, m := range ms {
			if m.Status != maas.StatusReady {
				t.Errorf("machine %s left %s", m.Hostname, maas.StatusNames[m.Status])
			}
		}
	})
}

func TestAFailedUpgradeStepIsAnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(1, "standard")
	e.maas.Add(1, "gpu")
	c := e.start(t, e.config(t)).client
	name := clusterName("upfail")
	create(t, e, c, name, "", &kaaspb.MachineSpec{Name: "g", Count: 1, InstanceType: "gpu"})
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
	failGPUs(e) // the worker's redeployment will fail; the control plane's will not
	if _, err := c.UpgradeCluster(e.ctx(t), &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.33.13"}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_ERROR, time.Minute,
		"upgrade from v1.32.13 to v1.33.13 stopped: machine "+name+"-g-1 failed: upgrade to v1.33.13 failed: MAAS reports Failed deployment")
}

func TestProviderDownIsRetriedThenReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(2, "standard")
	c := e.start(t, e.config(t)).client
	name := clusterName("outage")
	e.maas.SetDown(true)
	create(t, e, c, name, "", &kaaspb.MachineSpec{Name: "w", Count: 1})
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_PROVISIONING, 30*time.Second, "retrying after 1 failed attempt(s)")
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_ERROR, 30*time.Second,
		"cannot reach the maas provider after 3 attempts (still retrying): "+name+"-control-plane-1: MAAS list machines: 503 Service Unavailable")
	e.maas.SetDown(false)
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
}

// TestKilledMidProvisioningFinishes kills kaas (SIGKILL) while MAAS deploys the cluster's
// machines; another kaas takes the cluster over when the lease lapses and finishes it,
// without allocating any machine twice.
func TestKilledMidProvisioningFinishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{DeployTime: 2 * time.Second})
	e.maas.Add(5, "standard")
	environ := append(e.environ(), "PLINTH_KAAS_INSTANCE=first")
	first := startProc(t, "kaas", environ, true)
	c := kaaspb.NewClusterClient(grpcConn(t, first.Addr()))
	name := clusterName("killed")
	create(t, e, c, name, "", &kaaspb.MachineSpec{Name: "w", Count: 2})
	deadline := time.Now().Add(30 * time.Second)
	for len(machinesOf(e.maas, name)) == 0 || e.maas.History(machinesOf(e.maas, name)[0].SystemID)[len(e.maas.History(machinesOf(e.maas, name)[0].SystemID))-1] != "Deploying" {
		if time.Now().After(deadline) {
			t.Fatal("no machine started deploying")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.stop(syscall.SIGKILL)
	second := startProc(t, "kaas", append(e.environ(), "PLINTH_KAAS_INSTANCE=second"), true)
	c = kaaspb.NewClusterClient(grpcConn(t, second.Addr()))
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
	if n := len(machinesOf(e.maas, name)); n != 3 {
		t.Fatalf("%d machines allocated for 3", n)
	}
	for _, m := range machinesOf(e.maas, name) {
		if m.Deployments != 1 {
			t.Fatalf("machine %s deployed %d times", m.Hostname, m.Deployments)
		}
	}
	if !strings.Contains(first.logs.String(), "first") || !strings.Contains(second.logs.String(), "second") {
		t.Fatal("the instances did not identify themselves")
	}
}

// TestTwoReplicasNeverActOnOneClusterAtOnce runs two kaas replicas on one database: both
// reconcile, each cluster is acted on by one replica at a time (the MAAS region reports any
// moment two replicas had requests in flight for one cluster).
func TestTwoReplicasNeverActOnOneClusterAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{Latency: 10 * time.Millisecond, DeployTime: 200 * time.Millisecond})
	e.maas.Add(16, "standard")
	replica := func(n string) kaaspb.ClusterClient {
		return e.start(t, e.config(t, func(c *app.Config) { c.Instance, c.Workers, c.Poll = n, 4, 20*time.Millisecond })).client
	}
	a, b := replica("replica-a"), replica("replica-b")
	var names []string
	for i := range 8 {
		names = append(names, clusterName(fmt.Sprintf("rep%d", i)))
		create(t, e, []kaaspb.ClusterClient{a, b}[i%2], names[i], "", &kaaspb.MachineSpec{Name: "w", Count: 1})
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); e.waitStatus(t, a, n, kaaspb.ClusterStatus_RUNNING, 2*time.Minute) }()
	}
	wg.Wait()
	if o := e.maas.Overlaps(); len(o) > 0 {
		t.Fatalf("two replicas acted on one cluster at once: %v", o)
	}
	callers := e.maas.Callers()
	busy := 0
	for who, n := range callers {
		if strings.Contains(who, "replica-") && n > 0 {
			busy++
		}
	}
	if busy != 2 {
		t.Fatalf("both replicas should have worked: %v", callers)
	}
	t.Logf("requests per replica: %v", callers)
}
