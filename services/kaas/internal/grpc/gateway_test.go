package grpc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
)

// TestRoutesAreUpstreams pins the REST table to upstream's google.api.http options (as the
// contract records them in ../shared/spec/wire/kaas.md) and to the service's methods: every
// RPC has exactly its route.
func TestRoutesAreUpstreams(t *testing.T) {
	want := map[string]string{
		"CreateCluster": "POST /api/v1/cluster *", "GetCluster": "GET /api/v1/cluster", "DeleteCluster": "DELETE /api/v1/cluster",
		"GetClusterList": "GET /api/v1/cluster/list", "GetClusterNodesStatus": "GET /api/v1/cluster/nodesstatus",
		"GetVersionInformation": "GET /api/v1/version", "AddNodePool": "POST /api/v1/cluster/pool *",
		"DeleteNodePool": "DELETE /api/v1/cluster/pool", "ScaleNodePool": "PUT /api/v1/cluster/pool *",
		"GetUpgradeClusterInformation": "GET /api/v1/cluster/upgrade", "UpgradeCluster": "PUT /api/v1/cluster/upgrade *",
	}
	_ = kaaspb.File_cnct_kaas_api_api_proto
	d, err := protoregistry.GlobalFiles.FindDescriptorByName("cnct.kaas.api.Cluster")
	if err != nil {
		t.Fatal(err)
	}
	methods := d.(protoreflect.ServiceDescriptor).Methods()
	rs := routes()
	if len(rs) != methods.Len() || len(rs) != len(want) {
		t.Fatalf("%d routes for %d methods", len(rs), methods.Len())
	}
	for _, r := range rs {
		name := strings.TrimPrefix(r.rpc, "/cnct.kaas.api.Cluster/")
		got := r.method + " " + r.path
		if r.body {
			got += " *"
		}
		if want[name] != got || methods.ByName(protoreflect.Name(name)) == nil {
			t.Errorf("%s: %q, want %q", name, got, want[name])
		}
	}
}
