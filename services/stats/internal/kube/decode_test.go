package kube

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/kube/kubefixture"
)

func fixtures(t testing.TB) map[string][][]byte { return kubefixture.Documents(t) }

func TestCephClusterStatusMapping(t *testing.T) {
	cases := map[string]cluster.Status{
		`{"state":"Created","ceph":{}}`:     cluster.StatusReady,
		`{"state":"Connected","ceph":{}}`:   cluster.StatusReady,
		`{"state":"Creating","ceph":{}}`:    cluster.StatusNotReady,
		`{"state":"Updating","ceph":{}}`:    cluster.StatusNotReady,
		`{"state":"Connecting","ceph":{}}`:  cluster.StatusNotReady,
		`{"state":"Error","ceph":{}}`:       cluster.StatusNotReady,
		`{"phase":"Ready","ceph":{}}`:       cluster.StatusReady,
		`{"phase":"Progressing","ceph":{}}`: cluster.StatusNotReady,
		`{"phase":"Failure","ceph":{}}`:     cluster.StatusNotReady,
		`{"state":"Created"}`:               cluster.StatusUnknown, // before Rook's first health check
		`null`:                              cluster.StatusUnknown,
	}
	for status, want := range cases {
		d, err := Decode(KindCephCluster, []byte(`{"metadata":{"name":"c"},"spec":{"mon":{"count":3}},"status":`+status+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if d.Resource.Status != want {
			t.Errorf("status %s: %v, want %v", status, d.Resource.Status, want)
		}
	}
}

func TestPoolSpecs(t *testing.T) {
	cases := []struct {
		spec string
		want cluster.Pool
	}{
		{`{"replicated":{"size":3}}`, cluster.Pool{Size: 3, MinSize: 2}},
		{`{"replicated":{"size":2}}`, cluster.Pool{Size: 2, MinSize: 1}},
		{`{"replicated":{"size":3},"parameters":{"min_size":"1"}}`, cluster.Pool{Size: 3, MinSize: 1}},
		{`{"erasureCoded":{"dataChunks":4,"codingChunks":2}}`, cluster.Pool{Size: 6, MinSize: 5}},
		{`{}`, cluster.Pool{}},
	}
	for _, c := range cases {
		d, err := Decode(KindCephBlockPool, []byte(`{"metadata":{"name":"p"},"spec":`+c.spec+`}`))
		if err != nil {
			t.Fatal(err)
		}
		c.want.Name = "p"
		if d.Pools[0] != c.want {
			t.Errorf("%s: %+v, want %+v", c.spec, d.Pools[0], c.want)
		}
	}
}

func TestDecodeRefusesWhatIsNotAResource(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"metadata":{}}`, `{"metadata":{"name":"x"},"spec":{"mon":{"count":"three"}}}`} {
		if _, err := Decode(KindCephCluster, []byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	if _, err := Decode("Pod", []byte(`{"metadata":{"name":"x"}}`)); err == nil {
		t.Error("an unknown kind decoded")
	}
}

func TestQuantity(t *testing.T) {
	for raw, want := range map[string]string{`4`: "4", `"500G"`: "500G", `"3000G"`: "3T", `"96Gi"`: "96Gi", `null`: "0",
		``: "0", `"lots"`: "", `{}`: ""} {
		if got := quantity(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

// checkText fails for text an API answer cannot carry.
func checkText(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > maxMessage {
			t.Fatalf("unsafe text %q", s)
		}
	}
}

// FuzzDecodeResource feeds the Rook decoders; seeds are the test cluster's objects.
func FuzzDecodeResource(f *testing.F) {
	kinds := []string{KindCephCluster, KindCephBlockPool, KindCephFilesystem, KindCephObjectStore}
	fx := fixtures(f)
	for i, kind := range kinds {
		for _, doc := range fx[kind] {
			f.Add(uint8(i), doc)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		d, err := Decode(kinds[int(which)%len(kinds)], data)
		if err != nil {
			return
		}
		checkText(t, d.Resource.Name, d.Resource.Namespace, d.Resource.APIVersion)
		if d.Resource.Replicas < 0 || d.Mons < 0 || d.MDS < 0 || d.Gateways < 0 {
			t.Fatalf("negative counts %+v", d)
		}
		for _, p := range d.Pools {
			checkText(t, p.Name)
			if p.Size < 0 || p.MinSize < 0 {
				t.Fatalf("negative pool %+v", p)
			}
		}
		if d.Ceph != nil {
			checkText(t, d.Ceph.FSID, d.Ceph.Health)
			for _, c := range d.Ceph.Checks {
				checkText(t, c.Name, c.Severity, c.Message)
			}
		}
	})
}

// FuzzDecodeKoorCluster feeds the KoorCluster decoder.
func FuzzDecodeKoorCluster(f *testing.F) {
	for _, doc := range fixtures(f)["KoorCluster"] {
		f.Add(doc)
	}
	f.Add([]byte(`{"metadata":{"name":"k"},"status":{"totalResources":{"nodesCount":"1e400","cpu":-1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := DecodeKoorCluster(data)
		if err != nil {
			return
		}
		checkText(t, k.Name, k.Namespace, k.UpgradeMode, k.UpgradeEndpoint, k.UpgradeSchedule, k.TotalNodes, k.TotalStorage,
			k.TotalCPU, k.TotalMemory, k.Current.Kube, k.Current.Ceph)
	})
}

// FuzzNodeAndDeployment feeds Nodes and Deployments as the API server could serve them.
func FuzzNodeAndDeployment(f *testing.F) {
	f.Add(false, []byte(`{"metadata":{"name":"n1","labels":{"node-role.kubernetes.io/control-plane":"","kubernetes.io/role":"worker"}},`+
		`"status":{"conditions":[{"type":"Ready","status":"True"}],"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}`))
	f.Add(true, []byte(`{"metadata":{"name":"d"},"spec":{"replicas":3},"status":{"replicas":3,"readyReplicas":2}}`))
	f.Fuzz(func(t *testing.T, isDeployment bool, data []byte) {
		if isDeployment {
			var d appsv1.Deployment
			if json.Unmarshal(data, &d) == nil {
				r := Deployment(&d)
				checkText(t, r.Name, r.Namespace)
			}
			return
		}
		var n corev1.Node
		if json.Unmarshal(data, &n) == nil {
			out := Node(&n)
			checkText(t, append([]string{out.Name, out.InternalIP, out.ExternalIP}, out.Roles...)...)
			for _, r := range out.Roles {
				if len(r) > input.MaxName {
					t.Fatalf("role %q", r)
				}
			}
		}
	})
}
