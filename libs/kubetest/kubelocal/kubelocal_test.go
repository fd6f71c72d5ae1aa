package kubelocal_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/plinth-dev/plinth/libs/kubetest"
	"github.com/plinth-dev/plinth/libs/kubetest/kubelocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// The test's cluster keeps off `make kube-up`'s defaults (bridge, networks, ports), though
// only one cluster runs on a machine at a time.
const (
	bridge      = "plinthkt0"
	podCIDR     = "10.245.0.0/24"
	serviceCIDR = "10.97.0.0/24"
	nodeName    = "plinth-test-node"
)

var hostSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward",
	"net/bridge/bridge-nf-call-iptables"}

// TestNodeRunsPodsAndDownLeavesNothing starts the whole single-node cluster with
// cert-manager, runs a Deployment behind a Service that another pod calls through its
// ClusterIP (kube-proxy) and its name (cluster DNS), reads a pod's log through the apiserver
// (the kubelet's API), has cert-manager issue a CA and a certificate signed by it (as
// deploy/k8s/base's mTLS pairs are), then stops it all and checks the machine is as before:
// no process, mount, cgroup, iptables chain, interface or changed kernel setting left.
func TestNodeRunsPodsAndDownLeavesNothing(t *testing.T) {
	binDir := filepath.Dir(kubetest.Binary(t, "kubelet-"+kubelocal.Version))
	// Up may wait for another test's cluster (e2e's TestKubeSuite runs beside this package in
	// make test and holds the machine ~20 minutes under load): as long as go test's deadline
	// leaves the ~10 minutes this one needs after.
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(45 * time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-time.Minute))
	defer cancel()
	wait := time.Until(deadline) - 12*time.Minute
	if wait < time.Minute {
		t.Fatalf("go test's deadline leaves %s: this test needs about 12 minutes (go test -timeout)", time.Until(deadline).Round(time.Second))
	}
	// The host's settings before: read once this cluster holds the machine, not while
	// another one (which sets some of the same) runs.
	var before map[string]string
	dir := filepath.Join(t.TempDir(), "kube")
	c, err := kubelocal.Up(ctx, kubelocal.Options{
		Dir: dir, BinDir: binDir, NodeName: nodeName, Bridge: bridge,
		PodCIDR: podCIDR, ServiceCIDR: serviceCIDR, PortBase: 24540, Log: t.Logf, CertManager: true,
		WaitForMachine: wait, Claimed: func() { before = readSysctls(t) },
	})
	if errors.Is(err, kubelocal.ErrMissing) {
		testenv.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			if err := kubelocal.Down(context.Background(), dir, t.Logf); err != nil {
				t.Error(err)
			}
		}
	})
	t.Logf("node Ready in %s", c.StartupTime)

	client := c.Client
	web := runWeb(ctx, t, client)
	svc := web.Spec.ClusterIP
	out := runToCompletion(ctx, t, client, "client", fmt.Sprintf(
		`for i in $(seq 20); do printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s 80 | tail -n 1; done
		 printf '' | nc -w 3 10.97.0.1 443 && echo apiserver reachable
		 nslookup web.default.svc.cluster.local 2>&1`, svc))
	served := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "hello from "); ok {
			served[name] = true
		}
	}
	if len(served) != 2 {
		t.Errorf("20 calls to the Service %s reached %d pods (%v), want both replicas; client's log:\n%s", svc, len(served), served, out)
	}
	if !strings.Contains(out, "Address: "+svc) {
		t.Errorf("cluster DNS does not resolve web.default.svc.cluster.local to %s; client's log:\n%s", svc, out)
	}
	if !strings.Contains(out, "apiserver reachable") {
		t.Errorf("a pod cannot reach the kubernetes Service (10.97.0.1:443); client's log:\n%s", out)
	}

	issueCertificate(ctx, t, c)

	// No other cluster may start between Down and the checks: its kube-proxy chains and
	// kernel settings would read as ours left behind.
	release, err := kubelocal.HoldMachine()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	began := time.Now()
	if err := kubelocal.Down(ctx, dir, t.Logf); err != nil {
		t.Fatal(err)
	}
	stopped = true
	t.Logf("down in %s", time.Since(began))
	checkNothingLeft(t, dir, before)
}

// runWeb runs two busybox httpd replicas behind a Service and waits until both are Ready.
func runWeb(ctx context.Context, t *testing.T, client kubernetes.Interface) *corev1.Service {
	t.Helper()
	labels := map[string]string{"app": "web"}
	_, err := client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "httpd", Image: kubelocal.BusyboxImage, ImagePullPolicy: corev1.PullNever,
					Command: []string{"sh", "-c", `mkdir -p /www && echo "hello from $(hostname)" >/www/index.html && exec httpd -f -p 8080 -h /www`},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 1,
					},
				}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 2*time.Minute, func() error {
		d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas != 2 {
			return fmt.Errorf("%d of 2 replicas Ready", d.Status.ReadyReplicas)
		}
		return nil
	})
	return svc
}

// runToCompletion runs script in a busybox pod and returns its log, read through the
// apiserver from the kubelet.
func runToCompletion(ctx context.Context, t *testing.T, client kubernetes.Interface, name, script string) string {
	t.Helper()
	_, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: name, Image: kubelocal.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 2*time.Minute, func() error {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("pod %s is %s", name, p.Status.Phase)
		}
		return nil
	})
	log, err := client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s through the apiserver: %v", name, err)
	}
	return string(log)
}

func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, try func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range hostSysctls {
		if v, err := os.ReadFile("/proc/sys/" + k); err == nil {
			out[k] = string(bytes.TrimSpace(v))
		}
	}
	return out
}

func checkNothingLeft(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s is still there", dir)
	}
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		t.Errorf("interface %s is still there", bridge)
	}
	after := readSysctls(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("sysctl %s is %s, was %s before the cluster", k, after[k], v)
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/plinth-kube-" + nodeName)
	if len(cgroups) > 0 {
		t.Errorf("cgroups left: %v", cgroups)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(dir)) {
		t.Errorf("mounts under %s left", dir)
	}
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(cmd).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "KUBE-") || strings.Contains(line, "plinth-kube") {
				t.Errorf("%s still has %q", cmd, line)
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue // exited, waiting for init to reap it
		}
		t.Errorf("process still runs: %s", bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	if netns, _ := filepath.Glob("/run/netns/cni-*"); len(netns) > 0 {
		for _, n := range netns {
			out, _ := exec.Command("ip", "-n", filepath.Base(n), "-4", "-o", "addr").Output()
			if bytes.Contains(out, []byte("10.245.0.")) {
				t.Errorf("pod network namespace %s left", n)
			}
		}
	}
}

// issueCertificate makes the chain deploy/k8s/base makes for each mTLS service: a
// self-signed Issuer, a CA Certificate from it, a CA Issuer from that, and a server
// Certificate, and checks that cert-manager wrote a key pair signed by the CA.
func issueCertificate(ctx context.Context, t *testing.T, c *kubelocal.Cluster) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pki"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	issuers := schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	certs := schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
		spec map[string]any
	}{
		{issuers, "selfsigned", map[string]any{"selfSigned": map[string]any{}}},
		{certs, "ca", map[string]any{"isCA": true, "commonName": "test-ca", "secretName": "ca",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer"}}},
		{issuers, "ca", map[string]any{"ca": map[string]any{"secretName": "ca"}}},
		{certs, "server", map[string]any{"secretName": "server-tls", "dnsNames": []any{"server"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": "ca", "kind": "Issuer"}}},
	} {
		kind := "Issuer"
		if o.gvr == certs {
			kind = "Certificate"
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": kind,
			"metadata": map[string]any{"name": o.name, "namespace": ns}, "spec": o.spec,
		}}
		if _, err := dyn.Resource(o.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", kind, o.name, err)
		}
	}
	var secret *corev1.Secret
	waitFor(ctx, t, 2*time.Minute, func() error {
		var err error
		secret, err = c.Client.CoreV1().Secrets(ns).Get(ctx, "server-tls", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("cert-manager has not written server-tls: %w", err)
		}
		return nil
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatalf("server-tls has no CA certificate: %q", secret.Data["ca.crt"])
	}
	if _, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"]); err != nil {
		t.Fatalf("server-tls: %v", err)
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("server-tls: no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "server"}); err != nil {
		t.Errorf("server certificate does not verify against the CA cert-manager issued: %v", err)
	}

	// cert-manager's CA injector fills a webhook configuration's caBundle from the Certificate
	// its annotation names (as a webhook served with the server pair would be registered).
	// The webhook matches no object (its selector), so it changes nothing else here.
	none := &metav1.LabelSelector{MatchLabels: map[string]string{"plinth.test/never": "true"}}
	webhooks := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := webhooks.Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "pki-server", Annotations: map[string]string{"cert-manager.io/inject-ca-from": ns + "/server"}},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "server.pki.plinth.test",
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: "server"}},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			ObjectSelector:          none,
			NamespaceSelector:       none,
			FailurePolicy:           ptr.To(admissionv1.Ignore),
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = webhooks.Delete(context.Background(), "pki-server", metav1.DeleteOptions{}) })
	waitFor(ctx, t, time.Minute, func() error {
		got, err := webhooks.Get(ctx, "pki-server", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, secret.Data["ca.crt"]) {
			return fmt.Errorf("the CA injector has not set the webhook's caBundle to server-tls's ca.crt (it is %q)", got.Webhooks[0].ClientConfig.CABundle)
		}
		return nil
	})
}
