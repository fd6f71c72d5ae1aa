package kubetest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// StartControllerManager runs kube-controller-manager of the cluster's version against it
// and returns once its /healthz answers. Use Options.ControllerManager to start it with the
// cluster; call this to add it later.
func (c *Cluster) StartControllerManager(t testing.TB) {
	t.Helper()
	if c.kcm != nil {
		t.Fatal("kubetest: kube-controller-manager is already running")
	}
	binaryPath := Binary(t, "kube-controller-manager-"+c.version)
	err := withFreshPorts(1, func(ports []int) error {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		p, err := startReady("kube-controller-manager "+c.version,
			filepath.Join(c.dir, "kube-controller-manager.log"), binaryPath, []string{
				"--kubeconfig=" + c.kubePath,
				// Delegated authentication and authorization of its own endpoints go to the
				// apiserver as the admin; /healthz is always allowed.
				"--authentication-kubeconfig=" + c.kubePath,
				"--authorization-kubeconfig=" + c.kubePath,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--cert-dir=" + filepath.Join(c.dir, "kube-controller-manager-certs"),
				// One instance per cluster: no lease to wait for.
				"--leader-elect=false",
				// Signs service-account tokens for the token controller, publishes the CA in
				// every namespace's kube-root-ca.crt and signs approved CSRs, as in kubeadm.
				"--service-account-private-key-file=" + c.pki.SAKeyFile,
				"--root-ca-file=" + c.pki.CAFile,
				"--cluster-signing-cert-file=" + c.pki.CAFile,
				"--cluster-signing-key-file=" + c.pki.CAKeyFile,
				"--use-service-account-credentials=false",
			}, kube.HTTPProbe(url, "", nil, "ok"))
		c.kcm = p
		return err
	})
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.kcm.stopOnCleanup(t)
}
