package app_test

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
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
	c := e.start(t, e.config(t)).client

	worker := clusterName("badworker")
	create(t, e, c, worker, "", &kaaspb.MachineSpec{Name: "g", Count: 1, InstanceType: "gpu"}, &kaaspb.MachineSpec{Name: "w", Count: 1})
	e.waitStatus(t, c, worker, kaaspb.ClusterStatus_DEGRADED, time.Minute,
		"worker machine "+worker+"-g-1 of pool g failed: MAAS reports Failed deployment: Installation failed")
	cp := clusterName("badcp")
	create(t, e, c, cp, "gpu")
	e.waitStatus(t, c, cp, kaaspb.ClusterStatus_ERROR, time.Minute, "control-plane machine "+cp+"-control-plane-1 failed: MAAS reports Failed deployment")

	// Scaling the failed machine away (failed machines go first) brings the cluster back.
	if _, err := c.ScaleNodePool(e.ctx(t), &kaaspb.ScaleNodePoolMsg{ClusterName: worker, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "g", Count: 0}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, worker, kaaspb.ClusterStatus_RUNNING, time.Minute, "all 2 machines ready")
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
