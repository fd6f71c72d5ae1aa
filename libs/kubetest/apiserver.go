package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// apiserverArgs are the flags of a loopback apiserver over c's etcd and PKI.
func (c *Cluster) apiserverArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.pki.CertFile,
		"--tls-private-key-file=" + c.pki.KeyFile,
		"--client-ca-file=" + c.pki.CAFile,
		"--token-auth-file=" + c.pki.TokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + c.pki.SAPubFile,
		"--service-account-signing-key-file=" + c.pki.SAKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		// No kubelets mount tokens here, and pods created by tests carry none.
		"--disable-admission-plugins=ServiceAccount",
		// The `kubernetes` Endpoints would point at 127.0.0.1, which the reconciler refuses
		// (loudly, every ten seconds). Nothing in a test cluster routes to it.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.dir, "apiserver-certs"),
	}
	return append(args, c.extraArgs...)
}

// startAPIServer runs binary on port (0: fresh ports until one binds) and waits for /readyz.
func (c *Cluster) startAPIServer(binary string, port int) error {
	start := func(ports []int) error {
		url := fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0])
		p, err := startReady("kube-apiserver "+c.version, filepath.Join(c.dir, "kube-apiserver.log"),
			binary, c.apiserverArgs(ports[0]), kube.HTTPProbe(url, c.pki.Tokens[AdminUser], c.pki.CertPool, "ok"))
		if err != nil {
			return err
		}
		c.apiserver, c.port = p, ports[0]
		return nil
	}
	if port != 0 {
		return start([]int{port})
	}
	return withFreshPorts(1, start)
}

// connect writes the admin kubeconfig and builds the clients from it, so the file kubectl
// reads is exactly what the Go clients use.
func (c *Cluster) connect() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.URL(), CertificateAuthorityData: c.pki.CAPEM}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: c.pki.Tokens[AdminUser]}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: AdminUser, Namespace: "default"}
	cfg.CurrentContext = "kubetest"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	path := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	// Tests create objects in bursts; client-go's default 5 QPS would make them crawl.
	config.QPS, config.Burst = 200, 400
	if c.client, err = kubernetes.NewForConfig(config); err != nil {
		return err
	}
	if c.dynamic, err = dynamic.NewForConfig(config); err != nil {
		return err
	}
	if c.apiext, err = apiextensionsclient.NewForConfig(config); err != nil {
		return err
	}
	c.kubeconfig, c.kubePath, c.config = data, path, config
	return nil
}

// Upgrade stops kube-controller-manager (if running) and the apiserver, then starts the
// apiserver of version — and kube-controller-manager again if it ran — on the same etcd, PKI
// and port, as a control-plane upgrade (or downgrade) does. Objects, the kubeconfig and the
// clients stay valid.
func (c *Cluster) Upgrade(t testing.TB, version string) {
	t.Helper()
	binaryPath, err := binary("kube-apiserver-" + version)
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	hadKCM := c.kcm != nil
	if hadKCM {
		c.kcm.stop()
		c.kcm = nil
	}
	c.apiserver.stop()
	c.version = version
	if err := c.startAPIServer(binaryPath, c.port); err != nil {
		t.Fatalf("kubetest: upgrade to %s: %v", version, err)
	}
	c.apiserver.stopOnCleanup(t)
	if hadKCM {
		c.StartControllerManager(t)
	}
}
