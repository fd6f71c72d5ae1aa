package kubetest

import (
	"net"
	"time"

	"github.com/plinth-dev/plinth/libs/kubetest/internal/kube"
)

// Names of the identity every client of a kubetest cluster uses. The token file puts it in
// system:masters, so RBAC allows it everything, as kubeadm's admin.conf is allowed.
const (
	AdminUser  = "kubetest-admin"
	AdminGroup = "system:masters"
)

// serviceCIDR is the apiserver's --service-cluster-ip-range; its first address is the
// `kubernetes` Service's ClusterIP, which the serving certificate names too.
const (
	serviceCIDR          = "10.0.0.0/24"
	kubernetesSvcIP      = "10.0.0.1"
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// newPKI writes a CA, a serving certificate for the loopback apiserver, a service-account
// key pair and a token file with the admin's token into dir.
func newPKI(dir string) (*kube.PKI, error) {
	return kube.NewPKI(kube.PKIOptions{
		Dir:        dir,
		CAName:     "kubetest-ca",
		ServingIPs: []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(kubernetesSvcIP)},
		Users:      []kube.User{{Name: AdminUser, Groups: []string{AdminGroup}}},
		Validity:   24 * time.Hour, // outlives any test
	})
}
