package pki

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SelfKubeconfig is kaas's own kubeconfig of cluster (API server at endpoint, host:port), with
// a certificate issued for this connection (Self).
func SelfKubeconfig(c *Cluster, cluster, endpoint string) ([]byte, error) {
	self, err := c.Self()
	if err != nil {
		return nil, err
	}
	return KubeconfigFor(c.CA.CertPEM, self, cluster, "kaas", endpoint)
}

// KubeconfigFor is a kubeconfig for user (with its client certificate) of cluster, built with
// client-go's own types, so kubectl and every client read it as they read kubeadm's.
func KubeconfigFor(caPEM []byte, user KeyPair, cluster, userName, endpoint string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: "https://" + endpoint, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: user.CertPEM, ClientKeyData: user.KeyPEM}
	ctxName := userName + "@" + cluster
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: userName}
	cfg.CurrentContext = ctxName
	return clientcmd.Write(*cfg)
}
