package kubetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// The marks of a Node that kwok, not a kubelet, keeps alive. kwok manages exactly the Nodes
// carrying KwokNodeAnnotation=KwokNodeValue; the label and taint say so to anyone else
// (the label is what kwok's own tooling sets; the taint keeps real workloads away).
const (
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"
	KwokNodeLabel      = "type"
	KwokNodeLabelValue = "kwok"
)

// kwokConfig pins kwok's configuration to its defaults: without a --config, kwok would read
// ~/.kwok/kwok.yaml, whatever that holds on the machine.
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options: {}
`

// StartKwok runs kwok against the cluster, managing the Nodes annotated
// kwok.x-k8s.io/node=fake (see FakeNode): it marks them Ready, renews their leases, and runs
// the Pods bound to them (no containers — it plays the kubelet's part in the API). Use
// Options.Kwok to start it with the cluster.
func (c *Cluster) StartKwok(t testing.TB) {
	t.Helper()
	if c.kwok != nil {
		t.Fatal("kubetest: kwok is already running")
	}
	binaryPath := Binary(t, "kwok")
	configPath := filepath.Join(c.dir, "kwok.yaml")
	if err := os.WriteFile(configPath, []byte(kwokConfig), 0o600); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	err := withFreshPorts(1, func(ports []int) error {
		address := fmt.Sprintf("127.0.0.1:%d", ports[0])
		p, err := startReady("kwok", filepath.Join(c.dir, "kwok.log"), binaryPath, []string{
			"--config=" + configPath,
			"--kubeconfig=" + c.kubePath,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeValue,
			// Pod IPs from a range of their own, apart from the Service range.
			"--cidr=10.244.0.0/16",
			"--node-ip=127.0.0.1",
			// Its HTTP server answers /healthz once the controllers run.
			"--server-address=" + address,
		}, kube.HTTPProbe("http://"+address+"/healthz", "", nil, ""))
		c.kwok = p
		return err
	})
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.kwok.stopOnCleanup(t)
}

// FakeNode returns a Node for kwok to manage: annotated for kwok, labelled
// type=kwok and kubernetes.io/hostname, tainted kwok.x-k8s.io/node=fake:NoSchedule.
func FakeNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeValue},
			Labels: map[string]string{
				KwokNodeLabel:            KwokNodeLabelValue,
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: KwokNodeAnnotation, Value: KwokNodeValue, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// WaitNodeReady polls until the Node's Ready condition is True, failing the test after
// timeout.
func (c *Cluster) WaitNodeReady(t testing.TB, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not created yet, or a transient error: poll on
			}
			node = n
			return nodeReady(n), nil
		})
	if err != nil {
		t.Fatalf("kubetest: node %s not Ready after %s: %v (last seen: %+v)", name, timeout, err, conditions(node))
	}
	return node
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func conditions(n *corev1.Node) []corev1.NodeCondition {
	if n == nil {
		return nil
	}
	return n.Status.Conditions
}
