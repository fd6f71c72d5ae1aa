// Pins the upstream modules whose CustomResourceDefinition YAML the tests install into a real
// kube-apiserver (libs/kubetest.CRDsFromModule reads them from the module cache). Nothing here is
// compiled and nothing imports these modules, so do not run `go mod tidy` (it would drop them):
// after changing a version, run `GOWORK=off GOFLAGS=-mod=mod go mod download <module>` to record
// its go.sum lines (for Rook with GONOSUMDB=github.com/rook/rook: the checksum database does
// not vouch for it here, so go.sum is the pin). Kept out of go.work.
module github.com/plinth-dev/plinth/tools/crds

go 1.26.7

require (
	// Certificate, Issuer, …: deploy/crds/*.yaml.
	github.com/cert-manager/cert-manager v1.21.2
	// Cluster, Backup, Pooler, …: config/crd/bases/*.yaml.
	github.com/cloudnative-pg/cloudnative-pg v1.30.0
	// CephCluster, CephBlockPool, CephFilesystem, CephObjectStore, …: deploy/examples/crds.yaml.
	github.com/rook/rook v1.18.0
	// ObjectStore (barmancloud.cnpg.io/v1): config/crd/bases/*.yaml.
	github.com/cloudnative-pg/plugin-barman-cloud v0.14.0
	// LogicalVolume (topolvm.cybozu.com/v1): config/crd/bases/*.yaml.
	github.com/topolvm/topolvm v0.11.1
	// local-path-provisioner's own manifest (deploy/local-path-storage.yaml), which kubelocal
	// applies; the same version as tools/k8s/local-path builds.
	github.com/rancher/local-path-provisioner v0.0.30
)
