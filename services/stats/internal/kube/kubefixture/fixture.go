// Package kubefixture builds, in a real kube-apiserver, a storage cluster as Rook v1.18 and
// koor-operator write it — the custom resources with their status, the daemons' Deployments
// and Pods with Rook's labels, and the nodes — for the Kubernetes source's tests and the
// service's. The expected figures are in the tests that use it.
package kubefixture

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// Namespace is the storage cluster's namespace.
const Namespace = "rook-ceph"

//go:embed rook-ceph.yaml
var customYAML []byte

// Documents are rook-ceph.yaml's custom resources as JSON (status included), by kind.
func Documents(t testing.TB) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, u := range customResources(t) {
		data, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		out[u.GetKind()] = append(out[u.GetKind()], data)
	}
	return out
}

func customResources(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(customYAML), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			return out
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

var resources = map[string]schema.GroupVersionResource{
	"CephCluster":     {Group: "ceph.rook.io", Version: "v1", Resource: "cephclusters"},
	"CephBlockPool":   {Group: "ceph.rook.io", Version: "v1", Resource: "cephblockpools"},
	"CephFilesystem":  {Group: "ceph.rook.io", Version: "v1", Resource: "cephfilesystems"},
	"CephObjectStore": {Group: "ceph.rook.io", Version: "v1", Resource: "cephobjectstores"},
	"KoorCluster":     {Group: "storage.koor.tech", Version: "v1alpha1", Resource: "koorclusters"},
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Build creates the namespace and everything but the KoorCluster (see Koor) in c, which must
// serve Rook's CRDs:
//   - the CephCluster rook-ceph (3 mons, HEALTH_WARN MON_DISK_LOW, 3 TB), pools replicapool
//     (3 copies, Ready) and ec-pool (2+1, Failure), file system myfs (1 active MDS + standby)
//     and object store my-store (1 gateway, no status yet);
//   - Deployments rook-ceph-mon-a/b/c (1/1 ready), rook-ceph-operator (0/1 ready) and
//     csi-rbdplugin-provisioner (2/2);
//   - nodes node-1 (Ready, control-plane, 10.0.0.11 / 203.0.113.11), node-2 (Ready, roles
//     storage and worker), node-3 (not Ready) running Ceph pods, and node-4 running only a CSI
//     plugin.
func Build(t testing.TB, c *kubetest.Cluster) {
	t.Helper()
	if _, err := c.Client().CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range customResources(t) {
		if u.GetKind() != "KoorCluster" {
			create(t, c, u)
		}
	}
	ip := func(typ corev1.NodeAddressType, a string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: typ, Address: a}
	}
	node(t, c, "node-1", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "node-1"},
		ip(corev1.NodeInternalIP, "10.0.0.11"), ip(corev1.NodeExternalIP, "203.0.113.11"))
	node(t, c, "node-2", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/storage": "", "kubernetes.io/role": "worker"},
		ip(corev1.NodeInternalIP, "10.0.0.12"))
	node(t, c, "node-3", corev1.ConditionFalse, nil, ip(corev1.NodeInternalIP, "10.0.0.13"))
	node(t, c, "node-4", corev1.ConditionTrue, nil)
	for _, id := range []string{"a", "b", "c"} {
		l := component("cephclusters.ceph.rook.io")
		l["app"], l["mon"] = "rook-ceph-mon", id
		deployment(t, c, "rook-ceph-mon-"+id, l, 1, 1)
	}
	deployment(t, c, "rook-ceph-operator", map[string]string{"app": "rook-ceph-operator"}, 1, 0)
	deployment(t, c, "csi-rbdplugin-provisioner", map[string]string{"app": "csi-rbdplugin-provisioner"}, 2, 2)
	pod(t, c, "rook-ceph-mon-a-7d9f", "node-1", component("cephclusters.ceph.rook.io"))
	pod(t, c, "rook-ceph-osd-0-5c8b", "node-2", component("cephclusters.ceph.rook.io"))
	pod(t, c, "rook-ceph-mds-myfs-a-6b7c", "node-3", component("cephfilesystems.ceph.rook.io"))
	pod(t, c, "csi-rbdplugin-x2b4", "node-4", map[string]string{"app": "csi-rbdplugin"})
}

// Koor installs Koor's CRD (if c does not serve it yet) and creates the KoorCluster koor-ceph.
func Koor(t testing.TB, c *kubetest.Cluster) {
	t.Helper()
	c.InstallCRDs(t, kubetest.KoorCRDs(t)...)
	for _, u := range customResources(t) {
		if u.GetKind() == "KoorCluster" {
			create(t, c, u)
		}
	}
}

// Heal changes the cluster as its operators would once it recovered: the CephCluster reports
// HEALTH_OK without checks, node-3 is Ready and the operator's Deployment is ready.
func Heal(t testing.TB, c *kubetest.Cluster) {
	t.Helper()
	client := c.Dynamic().Resource(resources["CephCluster"]).Namespace(Namespace)
	cc, err := client.Get(ctxT(t), "rook-ceph", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cc.Object, "HEALTH_OK", "status", "ceph", "health")
	unstructured.RemoveNestedField(cc.Object, "status", "ceph", "details")
	if _, err := client.UpdateStatus(ctxT(t), cc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n3, err := c.Client().CoreV1().Nodes().Get(ctxT(t), "node-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n3.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := c.Client().CoreV1().Nodes().UpdateStatus(ctxT(t), n3, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	op, err := c.Client().AppsV1().Deployments(Namespace).Get(ctxT(t), "rook-ceph-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, c, op, 1, 1)
}

// create makes a custom resource and then records its status, as its operator does.
func create(t testing.TB, c *kubetest.Cluster, u *unstructured.Unstructured) {
	t.Helper()
	client := c.Dynamic().Resource(resources[u.GetKind()]).Namespace(Namespace)
	status, hasStatus := u.Object["status"]
	created, err := client.Create(ctxT(t), u.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	if hasStatus {
		created.Object["status"] = status
		if _, err := client.UpdateStatus(ctxT(t), created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// node creates a Node and sets its status as a kubelet would.
func node(t testing.TB, c *kubetest.Cluster, name string, ready corev1.ConditionStatus, labels map[string]string, addrs ...corev1.NodeAddress) {
	t.Helper()
	n, err := c.Client().CoreV1().Nodes().Create(ctxT(t), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	n.Status.Addresses = addrs
	if _, err := c.Client().CoreV1().Nodes().UpdateStatus(ctxT(t), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deployment creates a Deployment and sets its status as the controller manager would.
func deployment(t testing.TB, c *kubetest.Cluster, name string, labels map[string]string, replicas, ready int32) {
	t.Helper()
	labels["app.kubernetes.io/name"] = name
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "quay.io/ceph/ceph:v19.2.3"}}}}},
	}
	d, err := c.Client().AppsV1().Deployments(Namespace).Create(ctxT(t), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady(t, c, d, replicas, ready)
}

func setReady(t testing.TB, c *kubetest.Cluster, d *appsv1.Deployment, replicas, ready int32) {
	t.Helper()
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, ReadyReplicas: ready,
		AvailableReplicas: ready, UpdatedReplicas: replicas}
	if _, err := c.Client().AppsV1().Deployments(Namespace).UpdateStatus(ctxT(t), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pod places a pod on a node, as the scheduler would.
func pod(t testing.TB, c *kubetest.Cluster, name, nodeName string, labels map[string]string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "main", Image: "quay.io/ceph/ceph:v19.2.3"}}}}
	if _, err := c.Client().CoreV1().Pods(Namespace).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// component are the labels Rook puts on a daemon of a resource kind ("cephclusters.ceph.rook.io").
func component(kind string) map[string]string {
	return map[string]string{"app.kubernetes.io/component": kind, "app.kubernetes.io/part-of": "rook-ceph",
		"app.kubernetes.io/managed-by": "rook-ceph-operator", "rook_cluster": Namespace}
}
