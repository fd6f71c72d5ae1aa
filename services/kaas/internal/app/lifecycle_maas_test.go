package app_test

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/clientcmd"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// clusterName is a fresh cluster name: tests share one NATS stream and read events by name.
func clusterName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// machinesOf returns the MAAS machines kaas holds for cluster (by allocation comment).
func machinesOf(srv *maastest.Server, cluster string) []maastest.Machine {
	var out []maastest.Machine
	for _, m := range srv.Allocated("plinth-kaas:") {
		if strings.Contains(m.Comment, "kaas cluster "+cluster+",") {
			out = append(out, m)
		}
	}
	return out
}

func TestMAASLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(16, "standard")
	e.maas.Add(4, "gpu")
	k := e.start(t, e.config(t))
	// One after the other: an upgrade releases each machine before it allocates it again,
	// and another cluster scaling up at that moment may take it (a real MAAS race too).
	for _, cp := range []int32{1, 3} {
		began := time.Now()
		name := clusterName("life")
		t.Run(name, func(t *testing.T) { maasLifecycle(t, e, k.client, name, cp) })
		t.Logf("lifecycle with %d control-plane machines took %v", cp, time.Since(began))
	}
}

func maasLifecycle(t *testing.T, e *env, c kaaspb.ClusterClient, name string, cp int32) {
	ctx := e.ctx(t)
	created, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: cp},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 1, Labels: []*kaaspb.KubernetesLabel{{Name: "team", Value: "blue"}}}}})
	if err != nil || !created.GetOk() || created.GetCluster().GetStatus() != kaaspb.ClusterStatus_PROVISIONING {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("duplicate create: %v", err)
	}
	got := e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
	ms := machinesOf(e.maas, name)
	if len(ms) != int(cp)+1 {
		t.Fatalf("MAAS has %d machines for the cluster, want %d", len(ms), cp+1)
	}
	inits, cpJoins, workerJoins := 0, 0, 0
	for _, m := range ms {
		if m.Status != maas.StatusDeployed || !strings.Contains(string(m.UserData), "#cloud-config") {
			t.Fatalf("machine %s: %s", m.Hostname, maas.StatusNames[m.Status])
		}
		files := userDataFiles(t, m)
		switch {
		case strings.Contains(files, "kind: InitConfiguration"):
			inits++
		case strings.Contains(files, "kind: JoinConfiguration") && strings.Contains(files, "controlPlane: {}"):
			cpJoins++
		case strings.Contains(files, "kind: JoinConfiguration"):
			workerJoins++
			if !strings.Contains(files, "kaas.plinth.dev/instance-type=standard") || !strings.Contains(files, "team=blue") {
				t.Errorf("worker labels missing:\n%s", files)
			}
		}
	}
	if inits != 1 || cpJoins != int(cp)-1 || workerJoins != 1 {
		t.Fatalf("kubeadm init %d, control-plane joins %d, worker joins %d", inits, cpJoins, workerJoins)
	}
	kc, err := clientcmd.RESTConfigFromKubeConfig([]byte(got.GetKubeconfig()))
	if err != nil || !strings.HasPrefix(kc.Host, "https://127.77.") || !strings.HasSuffix(kc.Host, ":6443") || len(kc.CertData) == 0 {
		t.Fatalf("kubeconfig: %v %v", kc, err)
	}
	nodes, err := c.GetClusterNodesStatus(ctx, &kaaspb.GetClusterNodesStatusMsg{ClusterName: name})
	if err != nil || nodes.GetName() != name || nodes.GetCount() != cp+1 {
		t.Fatalf("nodes status %v %v", nodes, err)
	}
	for _, n := range nodes.GetMachines() {
		if n.GetMaasSystemId() == "" || !strings.HasPrefix(n.GetMaasHostname(), "node-") || n.GetMaasNodeStatus() != "Deployed" ||
			!strings.HasPrefix(n.GetMaasIPAddr(), "127.77.") || n.GetK8SNodeStatus() != "unknown" || n.GetK8SVersion() != "unknown" {
			t.Fatalf("machine status %v (the cluster's API is unreachable: Kubernetes fields must say unknown)", n)
		}
	}

	// Add a gpu pool, scale w up and down.
	if r, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: name, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "gpus", Count: 1, InstanceType: "gpu"}}}); err != nil || !r.GetOk() {
		t.Fatalf("add pool: %v %v", r, err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all "+itoa(cp+2)+" machines ready")
	gpus := 0
	for _, m := range machinesOf(e.maas, name) {
		if slices.Contains(m.Tags, "gpu") {
			gpus++
		}
	}
	if gpus != 1 {
		t.Fatalf("%d gpu machines", gpus)
	}
	if _, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 3}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all "+itoa(cp+4)+" machines ready")
	before := machinesOf(e.maas, name)
	if _, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all "+itoa(cp+2)+" machines ready")
	after := machinesOf(e.maas, name)
	var released []string
	for _, m := range before {
		if !slices.ContainsFunc(after, func(a maastest.Machine) bool { return a.SystemID == m.SystemID }) {
			released = append(released, m.SystemID)
			if h := strings.Join(e.maas.History(m.SystemID), ">"); !strings.Contains(h, "Deployed>Releasing>Ready") {
				t.Fatalf("released machine history %s", h)
			}
		}
	}
	if len(released) != 2 {
		t.Fatalf("scale-down released %d machines", len(released))
	}

	// Upgrade: the control plane first, one machine at a time, each redeployed.
	deployed := map[string]int{}
	for _, m := range machinesOf(e.maas, name) {
		deployed[m.SystemID] = m.Deployments
	}
	info, err := c.GetUpgradeClusterInformation(ctx, &kaaspb.GetUpgradeClusterInformationMsg{Name: name})
	if err != nil || !info.GetOk() || !slices.Equal(info.GetVersions(), []string{"v1.33.13"}) {
		t.Fatalf("upgrade info %v %v", info, err)
	}
	if r, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.33.13"}); err != nil || !r.GetOk() {
		t.Fatalf("upgrade %v %v", r, err)
	}
	if _, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.32.13"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("a second, different upgrade during one: %v", err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RECONCILING, time.Minute, "upgrading from v1.32.13 to v1.33.13")
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 2*time.Minute, "Kubernetes v1.33.13")
	for _, m := range machinesOf(e.maas, name) {
		if m.Deployments != deployed[m.SystemID]+1 || !strings.Contains(userDataFiles(t, m), "kubeadm=1.33.13-*") {
			t.Fatalf("machine %s: deployed %d times before the upgrade, %d after", m.Hostname, deployed[m.SystemID], m.Deployments)
		}
	}
	if info, _ := c.GetUpgradeClusterInformation(ctx, &kaaspb.GetUpgradeClusterInformationMsg{Name: name}); info.GetOk() || len(info.GetVersions()) != 0 {
		t.Fatalf("no newer version in the catalog: %v", info)
	}

	if _, err := c.DeleteNodePool(ctx, &kaaspb.DeleteNodePoolMsg{ClusterName: name, NodePoolNames: []string{"gpus"}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute, "all "+itoa(cp+1)+" machines ready")
	del, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name})
	if err != nil || !del.GetOk() {
		t.Fatalf("delete %v %v", del, err)
	}
	e.waitGone(t, c, name, time.Minute)
	if left := machinesOf(e.maas, name); len(left) != 0 {
		t.Fatalf("%d machines still allocated after the delete", len(left))
	}
	assertStatusEvents(t, e, name, []kaaspb.ClusterStatus{kaaspb.ClusterStatus_PROVISIONING, kaaspb.ClusterStatus_RUNNING,
		kaaspb.ClusterStatus_RECONCILING, kaaspb.ClusterStatus_RUNNING, kaaspb.ClusterStatus_STOPPING})
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
