package kubetest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// upstreamObject is a custom resource as its operator's users and the operator write it,
// with a check of each part of the CRD that matters to the suite: defaults applied,
// status subresource writable, schema enforced.
type upstreamObject struct {
	name     string
	resource string // plural
	manifest string // may carry a status, written through the status subresource
	// defaults the CRD's schema fills in on create (dotted path → value as printed).
	defaults    map[string]string
	statusPath  string
	statusValue string
	// invalidPath=invalidValue must be refused by the schema.
	invalidPath  string
	invalidValue any
}

var upstreamObjects = []upstreamObject{
	{
		name:     "rook CephCluster",
		resource: "cephclusters",
		manifest: `
apiVersion: ceph.rook.io/v1
kind: CephCluster
metadata: {name: rook-ceph, namespace: rook-ceph}
spec:
  cephVersion: {image: quay.io/ceph/ceph:v19.2.3}
  dataDirHostPath: /var/lib/rook
  mon: {count: 3, allowMultiplePerNode: false}
  mgr:
    count: 2
    modules: [{name: rook, enabled: true}]
  dashboard: {enabled: true, ssl: true}
  storage: {useAllNodes: true, useAllDevices: true}
status:
  phase: Ready
  state: Created
  message: Cluster created successfully
  ceph:
    health: HEALTH_OK
    fsid: 6ba7b810-9dad-11d1-80b4-00c04fd430c8
    capacity: {bytesAvailable: 322122547200, bytesTotal: 322122547200, bytesUsed: 0}
`,
		statusPath: "status.ceph.health", statusValue: "HEALTH_OK",
		invalidPath: "spec.mon.count", invalidValue: int64(12), // maximum 9
	},
	{
		name:     "cert-manager Certificate",
		resource: "certificates",
		manifest: `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: cnpgi-plugin-server, namespace: plinth}
spec:
  secretName: cnpgi-plugin-server-tls
  commonName: cnpgi-plugin
  dnsNames: [cnpgi-plugin, cnpgi-plugin.plinth.svc]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  usages: [server auth]
  issuerRef: {name: plinth-ca, kind: Issuer, group: cert-manager.io}
status:
  notAfter: "2027-01-01T00:00:00Z"
  conditions:
  - {type: Ready, status: "True", reason: Ready, message: Certificate is up to date and has not expired}
`,
		statusPath: "status.notAfter", statusValue: "2027-01-01T00:00:00Z",
		invalidPath: "spec.privateKey.algorithm", invalidValue: "DSA",
	},
	{
		name:     "cnpg Cluster",
		resource: "clusters",
		manifest: `
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: plinth-db, namespace: plinth}
spec:
  instances: 3
  storage: {size: 1Gi}
  plugins:
  - name: cnpgi.plinth.dev
    isWALArchiver: true
    parameters: {bucket: wal}
status:
  phase: Cluster in healthy state
  instances: 3
  readyInstances: 3
`,
		defaults:   map[string]string{"spec.logLevel": "info", "spec.primaryUpdateStrategy": "unsupervised"},
		statusPath: "status.phase", statusValue: "Cluster in healthy state",
		invalidPath: "spec.instances", invalidValue: int64(0), // minimum 1
	},
	{
		name:     "koor KoorCluster",
		resource: "koorclusters",
		manifest: `
apiVersion: storage.koor.tech/v1alpha1
kind: KoorCluster
metadata: {name: koor-ceph, namespace: rook-ceph}
spec:
  upgradeOptions: {}
status:
  meetsMinimumResources: false
  totalResources: {nodesCount: "3", storage: 300G, cpu: "12", memory: 24G}
  currentVersions: {kube: v1.33.13, koorOperator: v0.3.8, ksd: v1.12.0, ceph: v19.2.3}
  latestVersions:
    ceph: {version: v19.2.3, imageUri: quay.io/ceph/ceph:v19.2.3}
`,
		defaults: map[string]string{
			"spec.useAllDevices": "true", "spec.dashboardEnabled": "true",
			"spec.upgradeOptions.mode": "notify", "spec.ksdReleaseName": "ksd",
		},
		statusPath: "status.currentVersions.ceph", statusValue: "v19.2.3",
		invalidPath: "spec.upgradeOptions.mode", invalidValue: "sometimes",
	},
	{
		// Cluster-scoped; as TopoLVM v0.41's node plugin answers a snapshot lvmd refuses.
		name:     "topolvm v0.41 LogicalVolume",
		resource: "logicalvolumes",
		manifest: `
apiVersion: topolvm.io/v1
kind: LogicalVolume
metadata: {name: pvc-6ba7b810-snap}
spec: {name: pvc-6ba7b810-snap, nodeName: node-1, size: 300Mi, deviceClass: dev, source: pvc-6ba7b810, accessType: ro}
status:
  code: 12
  message: snapshots are made of thin volumes only
`,
		statusPath: "status.message", statusValue: "snapshots are made of thin volumes only",
		invalidPath: "spec.size", invalidValue: "300 MiB", // not a quantity
	},
}

func ensureNamespace(t *testing.T, c *kubetest.Cluster, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx(t), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}
