package kubetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/libs/kubetest"
)

// eventually polls cond every 100 ms until it holds, failing the test after timeout with
// cond's last description of what it saw.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) {
			var ok bool
			ok, seen = cond(ctx)
			return ok, nil
		})
	if err != nil {
		t.Fatalf("%s: not after %s (last seen: %s)", what, timeout, seen)
	}
}

// TestControllerManagerAndKwok: kube-controller-manager turns a Deployment into a ReplicaSet
// and Pods; kwok keeps a fake Node Ready and runs the Pods bound to it, so the Deployment
// becomes available — the whole path kaas' local clusters rely on, without a kubelet.
func TestControllerManagerAndKwok(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t, kubetest.Options{ControllerManager: true, Kwok: true})
	t.Logf("up with controller-manager and kwok in %s", c.StartupTime().Round(time.Millisecond))
	core := c.Client().CoreV1()
	ensureNamespace(t, c, "work")

	eventually(t, time.Minute, "default ServiceAccount in a new namespace", func(ctx context.Context) (bool, string) {
		_, err := core.ServiceAccounts("work").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	fake := kubetest.FakeNode("kwok-node-0")
	if _, err := core.Nodes().Create(ctx(t), fake, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-for-kwok"}}
	if _, err := core.Nodes().Create(ctx(t), plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := c.WaitNodeReady(t, fake.Name, time.Minute)
	if len(node.Status.Addresses) == 0 {
		t.Errorf("kwok node has no addresses: %+v", node.Status)
	}
	if other, err := core.Nodes().Get(ctx(t), plain.Name, metav1.GetOptions{}); err != nil || len(other.Status.Conditions) != 0 {
		t.Errorf("a Node without kwok's annotation got conditions %+v (err %v): kwok must leave it alone", other.Status.Conditions, err)
	}

	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "work"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "web", Image: "nginx:1.27"}},
					Tolerations: []corev1.Toleration{{Key: kubetest.KwokNodeAnnotation, Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	if _, err := c.Client().AppsV1().Deployments("work").Create(ctx(t), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	eventually(t, time.Minute, "ReplicaSet and two Pods from the Deployment", func(ctx context.Context) (bool, string) {
		sets, err := c.Client().AppsV1().ReplicaSets("work").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(sets.Items) != 1 || sets.Items[0].OwnerReferences[0].Name != "web" {
			return false, fmt.Sprintf("replicasets %v, err %v", len(sets.Items), err)
		}
		list, err := core.Pods("work").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		pods = list.Items
		return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
	})

	// No scheduler runs: bind the Pods to the kwok node as kube-scheduler would.
	for _, pod := range pods {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			Target:     corev1.ObjectReference{Kind: "Node", Name: fake.Name},
		}
		if err := core.Pods("work").Bind(ctx(t), binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind %s: %v", pod.Name, err)
		}
	}
	eventually(t, time.Minute, "Deployment available on the kwok node", func(ctx context.Context) (bool, string) {
		d, err := c.Client().AppsV1().Deployments("work").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 2, fmt.Sprintf("status %+v", d.Status)
	})
	list, err := core.Pods("work").List(ctx(t), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range list.Items {
		if pod.Status.Phase != corev1.PodRunning || !strings.HasPrefix(pod.Status.PodIP, "10.244.") {
			t.Errorf("pod %s: phase %s, IP %q; want Running with an IP from kwok's 10.244.0.0/16", pod.Name, pod.Status.Phase, pod.Status.PodIP)
		}
	}
}
