package app_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/services/stats/internal/kube/kubefixture"
)

// TestRPCsFromARealKubernetesCluster runs stats with only a Kubernetes source, on a real
// kube-apiserver holding a Rook cluster and a KoorCluster as their operators write them, and
// checks what the dashboard receives — then heals the cluster and sees the change arrive
// through the watches.
func TestRPCsFromARealKubernetesCluster(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t, kubetest.Options{CRDs: kubetest.RookCRDs(t)})
	kubefixture.Build(t, c)
	kubefixture.Koor(t, c)
	e := newEnv(t)
	cl := e.start(t, e.config(t, "PLINTH_STATS_KUBECONFIG="+c.KubeconfigPath(), "PLINTH_STATS_INVENTORY=false")).client

	var res *statspb.GetClusterResourcesResponse
	eventually(t, time.Minute, "the resources", func() (bool, string) {
		var err error
		res, err = cl.GetClusterResources(authed(t), &statspb.GetClusterResourcesRequest{})
		return err == nil && len(res.GetResources()) == 5, res.String()
	})
	ok, none := rstats.ReliabilityScore_RELIABILITY_OK, rstats.ReliabilityScore_RELIABILITY_NONE
	ready, notReady := rstats.ResourceStatus_RESOURCE_READY, rstats.ResourceStatus_RESOURCE_NOT_READY
	cr := func(kind, name string, st rstats.ResourceStatus, replicas int32, rel rstats.ReliabilityScore) *rstats.ResourceInfo {
		return &rstats.ResourceInfo{Apiversion: "ceph.rook.io/v1", Kind: kind, Namespace: "rook-ceph", Name: name, Status: st, Replicas: replicas, Reliability: rel}
	}
	want := &statspb.GetClusterResourcesResponse{
		Resources: []*rstats.ResourceInfo{
			cr("CephCluster", "rook-ceph", ready, 3, ok), cr("CephBlockPool", "ec-pool", notReady, 3, ok),
			cr("CephBlockPool", "replicapool", ready, 3, ok), cr("CephFilesystem", "myfs", ready, 2, ok),
			cr("CephObjectStore", "my-store", rstats.ResourceStatus_RESOURCE_UNKNOWN, 1, none),
		},
		Deployments: []*rstats.ResourceInfo{
			{Apiversion: "apps/v1", Kind: "Deployment", Namespace: "rook-ceph", Name: "csi-rbdplugin-provisioner", Status: ready, Replicas: 2, Reliability: ok},
			{Apiversion: "apps/v1", Kind: "Deployment", Namespace: "rook-ceph", Name: "rook-ceph-mon-a", Status: ready, Replicas: 1, Reliability: none},
			{Apiversion: "apps/v1", Kind: "Deployment", Namespace: "rook-ceph", Name: "rook-ceph-mon-b", Status: ready, Replicas: 1, Reliability: none},
			{Apiversion: "apps/v1", Kind: "Deployment", Namespace: "rook-ceph", Name: "rook-ceph-mon-c", Status: ready, Replicas: 1, Reliability: none},
			{Apiversion: "apps/v1", Kind: "Deployment", Namespace: "rook-ceph", Name: "rook-ceph-operator", Status: notReady, Replicas: 1, Reliability: none},
		},
	}
	if !proto.Equal(res, want) {
		t.Errorf("resources\n%v\nwant\n%v", res, want)
	}

	nodes, err := cl.GetClusterNodes(authed(t), &statspb.GetClusterNodesRequest{})
	if err != nil || len(nodes.GetNodes()) != 3 {
		t.Fatalf("nodes %v %v; want node-1..3", nodes, err)
	}
	n1 := nodes.GetNodes()[0]
	if n1.GetName() != "node-1" || n1.GetStatus() != ready || len(n1.GetRoles()) != 1 || n1.GetRoles()[0] != "control-plane" ||
		n1.GetInternalIp() != "10.0.0.11" || n1.GetExternalIp() != "203.0.113.11" || n1.GetAge() == nil {
		t.Errorf("node-1 %v", n1)
	}
	if nodes.GetNodes()[2].GetStatus() != notReady {
		t.Errorf("node-3 %v", nodes.GetNodes()[2])
	}

	koor, err := cl.GetKoorCluster(authed(t), &statspb.GetKoorClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	k := koor.GetKoorCluster()
	if k.GetName() != "koor-ceph" || !k.GetSpec().GetUseAllDevices().GetValue() || k.GetSpec().GetMonitoringEnabled().GetValue() ||
		k.GetSpec().GetMonitoringEnabled() == nil || k.GetSpec().GetUpgradeOptions().GetMode() != rstats.UpgradeMode_UPGRADE_MODE_UPGRADE ||
		k.GetStatus().GetTotalResources().GetStorage() != "3T" || k.GetStatus().GetCurrentVersions().GetCeph() != "v19.2.3" ||
		k.GetStatus().GetLatestVersions().GetCeph().GetImageUri() != "quay.io/ceph/ceph:v19.2.4" || k.GetStatus().GetLatestVersions().GetKoorOperator() != nil {
		t.Errorf("KoorCluster %v", k)
	}

	// Without the Ceph source, what Rook recorded: its health, checks, capacity, monitors.
	st := stats(t, cl, "Rook's report", func(s *rstats.ClusterStats) bool { return s.GetId() != "" })
	if st.GetId() != "8f5cf6a2-1c3d-4f5e-9a0b-2c4d6e8f0a1b" || st.GetStatus() != "HEALTH_WARN" || len(st.GetCrashes()) != 1 ||
		st.GetServices().GetMon().GetDaemonCount() != 3 || st.GetData().GetUsage().GetTotal() != 3221225472000 || st.GetData().GetPools().GetPools() != 6 {
		t.Errorf("stats from Rook %v", st)
	}
	r := radarOf(t, cl)
	if r.GetClusterHealth() != 50 || r.GetNodesHealth() < 66.6 || r.GetNodesHealth() > 66.7 || r.GetCapacityAvailable() != 90 || r.GetReliability() != 75 {
		t.Errorf("radar %v; want 50, 66.7 (2 of 3 nodes), 90, and 75 (of pools, mons, MDS, gateways: one gateway fails)", r)
	}

	kubefixture.Heal(t, c)
	eventually(t, time.Minute, "the healed cluster through the watches", func() (bool, string) {
		r := radarOf(t, cl)
		return r.GetClusterHealth() == 100 && r.GetNodesHealth() == 100, r.String()
	})
	if _, err := cl.GetKoorCluster(bearer(ctxT(t), "plt_wrong"), &statspb.GetKoorClusterRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("GetKoorCluster with a wrong token: %v", err)
	}
}
