package app_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// TestVagrantLifecycle makes a real cluster on netns machines of a real vagrant-server and
// runner: etcd, kube-apiserver and kube-controller-manager on the control-plane machine,
// every machine's Node kept by kwok. client-go with the kubeconfig from kaas sees one Ready
// node per machine, runs a Deployment, and sees the upgraded version after UpgradeCluster.
func TestVagrantLifecycle(t *testing.T) {
	t.Parallel()
	e, v, k := vagrantKaasInstance(t)
	c := k.client
	ctx := e.ctx(t)
	name := clusterName("vg")
	began := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }

	if _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 2, Labels: []*kaaspb.KubernetesLabel{{Name: "team", Value: "blue"}}}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_PROVISIONING, time.Minute)
	got := e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 5*time.Minute)
	step("created: RUNNING")
	kc := clientFor(t, got.GetKubeconfig())
	assertNodes(t, kc, 3, "v1.32.13")
	assertAPIVersion(t, kc, "v1.32.13")
	if n := len(v.targets(t)); n != 3 {
		t.Fatalf("vagrant-server has %d targets, want 3", n)
	}
	nodes, err := c.GetClusterNodesStatus(ctx, &kaaspb.GetClusterNodesStatusMsg{ClusterName: name})
	if err != nil || nodes.GetCount() != 3 {
		t.Fatalf("nodes status %v %v", nodes, err)
	}
	for _, n := range nodes.GetMachines() {
		if n.GetK8SNodeStatus() != "Ready" || n.GetK8SVersion() != "v1.32.13" || n.GetMaasSystemId() == "" ||
			!strings.HasPrefix(n.GetMaasHostname(), name+"-") || n.GetMaasNodeStatus() != "running" || n.GetMaasIPAddr() == "" {
			t.Fatalf("machine status %v", n)
		}
	}
	// Each machine names the vagrant job that last worked on it, and vagrant-server has it.
	for _, m := range clusterInfo(t, e, k, name).GetMachines() {
		j, err := v.client.GetJob(v.ctx(t), &vagrant.GetJobRequest{JobId: m.GetVagrantJobId()})
		if err != nil || m.GetVagrantJobId() == "" || j.GetState() != vagrant.Job_SUCCESS {
			t.Fatalf("machine %s: job %q: %v %v", m.GetName(), m.GetVagrantJobId(), j.GetState(), err)
		}
	}
	kubectl(t, got.GetKubeconfig(), name)
	runDeployment(t, kc, name+"-w-1")
	step("client-go: 3 Ready nodes, a Deployment's pods run")

	if _, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: name, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "extra", Count: 1, InstanceType: "gpu"}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RECONCILING, time.Minute)
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 3*time.Minute, "all 4 machines ready")
	assertNodes(t, kc, 4, "v1.32.13")
	step("pool added")

	if _, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 3*time.Minute, "all 3 machines ready")
	assertNodes(t, kc, 3, "v1.32.13")
	if n := len(v.targets(t)); n != 3 {
		t.Fatalf("vagrant-server has %d targets after the scale-down, want 3", n)
	}
	step("scaled down")

	if _, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.33.13"}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RECONCILING, time.Minute, "upgrading")
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 5*time.Minute, "Kubernetes v1.33.13")
	assertAPIVersion(t, kc, "v1.33.13")
	assertNodes(t, kc, 3, "v1.33.13")
	step("upgraded to v1.33.13")

	if _, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_STOPPING, time.Minute)
	e.waitGone(t, c, name, 3*time.Minute)
	if n := len(v.targets(t)); n != 0 {
		t.Fatalf("vagrant-server still has %d targets", n)
	}
	step("deleted")
}

// vagrantKaas is kaas with the vagrant provider on a vagrant-server and runner of the test's own.
func vagrantKaas(t *testing.T) (*env, *vagrantEnv, kaaspb.ClusterClient) {
	e, v, k := vagrantKaasInstance(t)
	return e, v, k.client
}

// vagrantKaasInstance is vagrantKaas with the whole instance (its plinth.kaas.v1 client too).
func vagrantKaasInstance(t *testing.T) (*env, *vagrantEnv, *instance) {
	e := newEnv(t, maastest.Options{})
	v := startVagrant(t, e)
	return e, v, e.start(t, v.config(t, e))
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// assertNodes waits until the cluster has n nodes, all Ready on version and marked simulated.
func assertNodes(t *testing.T, kc kubernetes.Interface, n int, version string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		list, err := kc.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		ok := len(list.Items) == n
		var states []string
		for _, node := range list.Items {
			ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
				return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			})
			states = append(states, node.Name+":"+node.Status.NodeInfo.KubeletVersion)
			if !ready || node.Status.NodeInfo.KubeletVersion != version || node.Labels["kaas.plinth.dev/simulated"] != "true" {
				ok = false
			}
		}
		if ok {
			return
		}
		last = strings.Join(states, ", ")
	}
	t.Fatalf("want %d Ready nodes on %s; last: %s", n, version, last)
}

func assertAPIVersion(t *testing.T, kc kubernetes.Interface, want string) {
	t.Helper()
	v, err := kc.Discovery().ServerVersion()
	if err != nil || v.GitVersion != want {
		t.Fatalf("/version: %v %v, want %s", v, err, want)
	}
}

// runDeployment creates a Deployment whose pods are bound to node (there is no scheduler),
// and waits until the controller manager made its pods and kwok runs them.
func runDeployment(t *testing.T, kc kubernetes.Interface, node string) {
	t.Helper()
	ctx := context.Background()
	replicas := int32(2)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeName:    node,
				Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}}}}}
	if _, err := kc.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last string
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		pods, err := kc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			last = err.Error()
			continue
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == int(replicas) {
			return
		}
		last = itoa(int32(len(pods.Items))) + " pods, " + itoa(int32(running)) + " running"
	}
	t.Fatalf("the Deployment's pods did not run: %s", last)
}

// kubectl runs `kubectl --kubeconfig <from kaas> get nodes` when kubectl is installed.
func kubectl(t *testing.T, kubeconfig, name string) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl is not installed; client-go checks the same kubeconfig")
		return
	}
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeFile(file, kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--kubeconfig", file, "get", "nodes").CombinedOutput()
	if err != nil || !strings.Contains(string(out), name+"-control-plane-1") || !strings.Contains(string(out), "Ready") {
		t.Fatalf("kubectl get nodes: %v\n%s", err, out)
	}
	t.Logf("kubectl --kubeconfig <from kaas> get nodes:\n%s", out)
}

// TestVagrantHAControlPlane makes a cluster with three control-plane machines: etcd grows
// one member at a time, every machine runs an API server with its own certificate, and the
// controller managers elect a leader.
func TestVagrantHAControlPlane(t *testing.T) {
	t.Parallel()
	e, _, c := vagrantKaas(t)
	ctx := e.ctx(t)
	name := clusterName("ha")
	began := time.Now()
	if _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.33.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 3},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 1}}}); err != nil {
		t.Fatal(err)
	}
	got := e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, 6*time.Minute)
	t.Logf("3 control-plane machines and a worker RUNNING after %v", time.Since(began))
	kc := clientFor(t, got.GetKubeconfig())
	assertNodes(t, kc, 4, "v1.33.13")
	nodes, err := c.GetClusterNodesStatus(ctx, &kaaspb.GetClusterNodesStatusMsg{ClusterName: name})
	if err != nil {
		t.Fatal(err)
	}
	cps := 0
	for _, n := range nodes.GetMachines() {
		if !strings.Contains(n.GetMaasHostname(), "-control-plane-") {
			continue
		}
		cps++
		// Every control-plane machine serves the API with a certificate for its own address.
		cfg, _ := clientcmd.RESTConfigFromKubeConfig([]byte(got.GetKubeconfig()))
		cfg.Host = "https://" + n.GetMaasIPAddr() + ":6443"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := cs.Discovery().ServerVersion(); err != nil || v.GitVersion != "v1.33.13" {
			t.Fatalf("API server on %s: %v %v", n.GetMaasIPAddr(), v, err)
		}
	}
	if cps != 3 {
		t.Fatalf("%d control-plane machines", cps)
	}
	if _, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, c, name, 3*time.Minute)
	t.Logf("whole HA lifecycle: %v", time.Since(began))
}
