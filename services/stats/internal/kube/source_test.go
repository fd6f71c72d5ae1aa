package kube_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/kube"
	"github.com/plinth-dev/plinth/services/stats/internal/kube/kubefixture"
)

const ns = kubefixture.Namespace

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// readUntil reads until cond holds, waking on the source's change notifications.
func readUntil(t *testing.T, src *kube.Source, what string, cond func(*cluster.Kube) bool) *cluster.Kube {
	t.Helper()
	deadline := time.After(45 * time.Second)
	for {
		k, err := src.ReadKube(ctxT(t))
		if err == nil && cond(k) {
			return k
		}
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s (last: %+v, %v)", what, k, err)
		case <-src.Changed():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestSourceReadsAStorageClusterAndFollowsIt(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t, kubetest.Options{CRDs: kubetest.RookCRDs(t)})
	kubefixture.Build(t, c)

	src, err := kube.New(kube.Config{REST: c.Config(), Namespace: ns, Rediscover: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	src.Start(ctx)
	t.Cleanup(func() { cancel(); src.Shutdown() })

	k := readUntil(t, src, "every object", func(k *cluster.Kube) bool { return len(k.Resources) == 5 && len(k.Deployments) == 5 })
	wantResources := []cluster.Resource{
		{APIVersion: "ceph.rook.io/v1", Kind: "CephCluster", Namespace: ns, Name: "rook-ceph", Status: cluster.StatusReady, Replicas: 3, Reliability: cluster.ReliabilityOK},
		{APIVersion: "ceph.rook.io/v1", Kind: "CephBlockPool", Namespace: ns, Name: "ec-pool", Status: cluster.StatusNotReady, Replicas: 3, Reliability: cluster.ReliabilityOK},
		{APIVersion: "ceph.rook.io/v1", Kind: "CephBlockPool", Namespace: ns, Name: "replicapool", Status: cluster.StatusReady, Replicas: 3, Reliability: cluster.ReliabilityOK},
		{APIVersion: "ceph.rook.io/v1", Kind: "CephFilesystem", Namespace: ns, Name: "myfs", Status: cluster.StatusReady, Replicas: 2, Reliability: cluster.ReliabilityOK},
		{APIVersion: "ceph.rook.io/v1", Kind: "CephObjectStore", Namespace: ns, Name: "my-store", Status: cluster.StatusUnknown, Replicas: 1, Reliability: cluster.ReliabilityNone},
	}
	if !reflect.DeepEqual(k.Resources, wantResources) {
		t.Errorf("resources\n%+v\nwant\n%+v", k.Resources, wantResources)
	}
	dep := func(name string, st cluster.Status, replicas int32, rel cluster.Reliability) cluster.Resource {
		return cluster.Resource{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name, Status: st, Replicas: replicas, Reliability: rel}
	}
	wantDeployments := []cluster.Resource{
		dep("csi-rbdplugin-provisioner", cluster.StatusReady, 2, cluster.ReliabilityOK),
		dep("rook-ceph-mon-a", cluster.StatusReady, 1, cluster.ReliabilityNone),
		dep("rook-ceph-mon-b", cluster.StatusReady, 1, cluster.ReliabilityNone),
		dep("rook-ceph-mon-c", cluster.StatusReady, 1, cluster.ReliabilityNone),
		dep("rook-ceph-operator", cluster.StatusNotReady, 1, cluster.ReliabilityNone),
	}
	if !reflect.DeepEqual(k.Deployments, wantDeployments) {
		t.Errorf("deployments\n%+v\nwant\n%+v", k.Deployments, wantDeployments)
	}
	if len(k.Nodes) != 3 {
		t.Fatalf("nodes %+v; want node-1..3, which run Ceph pods", k.Nodes)
	}
	n1, n2, n3 := k.Nodes[0], k.Nodes[1], k.Nodes[2]
	if n1.Name != "node-1" || n1.Status != cluster.StatusReady || !reflect.DeepEqual(n1.Roles, []string{"control-plane"}) ||
		n1.InternalIP != "10.0.0.11" || n1.ExternalIP != "203.0.113.11" || n1.Since.IsZero() || time.Since(n1.Since) > time.Hour {
		t.Errorf("node-1 %+v", n1)
	}
	if !reflect.DeepEqual(n2.Roles, []string{"storage", "worker"}) || n3.Status != cluster.StatusNotReady {
		t.Errorf("node-2 %+v node-3 %+v", n2, n3)
	}
	rook := k.RookCeph
	if rook == nil || rook.Origin != cluster.OriginRook || rook.FSID != "8f5cf6a2-1c3d-4f5e-9a0b-2c4d6e8f0a1b" || rook.Health != "HEALTH_WARN" || len(rook.Checks) != 1 ||
		rook.Checks[0].Message != "mon b is low on available space" || rook.Usage.Total != 3221225472000 ||
		!reflect.DeepEqual(rook.Mons, []string{"a", "b", "c"}) || len(rook.Pools) != 6 {
		t.Errorf("what Rook recorded: %+v", rook)
	}
	if r := k.Redundancy; r.Mons != 3 || r.Filesystems != 1 || r.MDS != 2 || r.ObjectStores != 1 || r.RGW != 1 || len(r.Pools) != 6 {
		t.Errorf("redundancy %+v", r)
	}
	if k.KoorCluster != nil {
		t.Errorf("a KoorCluster without its CRD: %+v", k.KoorCluster)
	}

	// Koor's operator is installed after stats started; then the cluster changes.
	kubefixture.Koor(t, c)
	k = readUntil(t, src, "the KoorCluster", func(k *cluster.Kube) bool { return k.KoorCluster != nil })
	kc := k.KoorCluster
	if kc.Name != "koor-ceph" || kc.Namespace != ns || kc.UseAllDevices == nil || !*kc.UseAllDevices || kc.MonitoringEnabled == nil ||
		*kc.MonitoringEnabled || kc.DashboardEnabled == nil || !*kc.DashboardEnabled || kc.UpgradeMode != "upgrade" ||
		kc.UpgradeEndpoint != "https://versions.koor.tech" || kc.UpgradeSchedule != "CRON_TZ=UTC 0 3 * * *" || kc.KsdReleaseName != "ksd" ||
		kc.TotalNodes != "4" || kc.TotalStorage != "3T" || kc.TotalCPU != "24" || kc.TotalMemory != "96Gi" || !kc.MeetsMinimumResources ||
		kc.Current.Ceph != "v19.2.3" || kc.Latest == nil || kc.Latest.Ceph.Version != "v19.2.4" || kc.Latest.KoorOperator != nil ||
		kc.Latest.Ksd.HelmChart != "rook-ceph" {
		t.Errorf("KoorCluster %+v latest %+v", kc, kc.Latest)
	}

	kubefixture.Heal(t, c)
	readUntil(t, src, "the watched changes", func(k *cluster.Kube) bool {
		return k.RookCeph.Health == "HEALTH_OK" && len(k.RookCeph.Checks) == 0 && k.Nodes[2].Status == cluster.StatusReady &&
			k.Deployments[4].Status == cluster.StatusReady
	})
}
