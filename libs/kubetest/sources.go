package kubetest

import (
	_ "embed"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The upstream modules the suite's CRDs come from; tools/crds/go.mod pins their versions.
const (
	RookModule        = "github.com/rook/rook"
	CertManagerModule = "github.com/cert-manager/cert-manager"
	CNPGModule        = "github.com/cloudnative-pg/cloudnative-pg"
	TopoLVMModule     = "github.com/topolvm/topolvm"
	BarmanCloudModule = "github.com/cloudnative-pg/plugin-barman-cloud"
)

// BarmanCloudCRDs are plugin-barman-cloud's CRDs (config/crd/bases): ObjectStore
// (barmancloud.cnpg.io/v1), which cnpgi-plugin reads as barman-cloud's successor.
func BarmanCloudCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return CRDsFromModule(t, BarmanCloudModule, "config/crd/bases/*.yaml")
}

// RookCRDs are Rook's CRDs as its operator's users install them (deploy/examples/crds.yaml):
// CephCluster, CephBlockPool, CephFilesystem, CephObjectStore and the rest (ceph.rook.io).
func RookCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return CRDsFromModule(t, RookModule, "deploy/examples/crds.yaml")
}

// CertManagerCRDs are cert-manager's CRDs (deploy/crds): Certificate, Issuer, ClusterIssuer,
// CertificateRequest, Order and Challenge.
func CertManagerCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return CRDsFromModule(t, CertManagerModule, "deploy/crds/*.yaml")
}

// CNPGCRDs are CloudNativePG's CRDs (config/crd/bases): Cluster, Backup, ScheduledBackup,
// Pooler, Database, … (postgresql.cnpg.io).
func CNPGCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return CRDsFromModule(t, CNPGModule, "config/crd/bases/*.yaml")
}

// TopoLVMCRDs are TopoLVM's CRDs (config/crd/bases): LogicalVolume (topolvm.cybozu.com/v1),
// which its node plugin turns into LVs through lvmd.
func TopoLVMCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return CRDsFromModule(t, TopoLVMModule, "config/crd/bases/*.yaml")
}

// topoLVM041ModulesDir pins TopoLVM v0.41.0, whose node plugin e2e runs beside v0.11's:
// tools/crds can require one version of TopoLVM's module, and requires v0.11.1.
const topoLVM041ModulesDir = "tools/k8s/topolvm041"

// TopoLVM041CRDs is TopoLVM v0.41's LogicalVolume CRD in its own group (topolvm.io/v1, the
// default since v0.17; config/crd/bases/topolvm.io_*.yaml), at the version
// tools/k8s/topolvm041/go.mod pins. Its copy of the legacy topolvm.cybozu.com CRD is left
// out: TopoLVMCRDs installs that one, and both can be in one cluster.
func TopoLVM041CRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return crdsFromModuleIn(t, topoLVM041ModulesDir, TopoLVMModule, []string{"config/crd/bases/topolvm.io_*.yaml"})
}

//go:embed crds/storage.koor.tech_koorclusters.yaml
var koorCRD []byte

// KoorCRDs is the KoorCluster CRD (storage.koor.tech/v1alpha1). Koor's operator module is
// refused by the Go module proxy, so this one is ours, written from the spec (see the file).
func KoorCRDs(t testing.TB) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := ParseCRDs(koorCRD)
	if err != nil || len(crds) != 1 {
		t.Fatalf("kubetest: embedded KoorCluster CRD: %v (%d CRDs)", err, len(crds))
	}
	return crds
}
