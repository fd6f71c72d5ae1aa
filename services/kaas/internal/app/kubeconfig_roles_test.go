package app_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"k8s.io/client-go/tools/clientcmd"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// kubeconfigCert is the client certificate of the kubeconfig GetCluster answered.
func kubeconfigCert(t *testing.T, kubeconfig string) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatalf("the kubeconfig does not parse: %v", err)
	}
	auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if auth == nil {
		t.Fatal("the kubeconfig's current context names no user")
	}
	b, _ := pem.Decode(auth.ClientCertificateData)
	if b == nil {
		t.Fatal("the kubeconfig's user has no PEM client certificate")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// roleGroup is the Kubernetes group kaas puts each Plinth role's certificate in.
var roleGroup = map[authz.Role]string{authz.Viewer: "plinth:viewers", authz.Operator: "plinth:operators", authz.Admin: "plinth:admins"}

// TestGetClusterKubeconfigIsTheCallersRole is issue #36's attacker: a viewer (and an
// operator) calling GetCluster, a read, got the admin kubeconfig — O=system:masters, valid a
// year. Now each role gets a certificate issued on the call, in its own group (bound in the
// cluster to view, admin, cluster-admin), never system:masters, valid hours; the REST path
// CNCT's scripts use answers the same.
func TestGetClusterKubeconfigIsTheCallersRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(2, "standard")
	k := e.start(t, e.config(t))
	name := clusterName("roles")
	if _, err := k.client.CreateCluster(e.ctx(t), &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.33.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, k.client, name, kaaspb.ClusterStatus_RUNNING, 2*time.Minute)
	tokens := map[authz.Role]string{authz.Admin: e.token,
		authz.Operator: newUserToken(t, e, authz.Operator), authz.Viewer: newUserToken(t, e, authz.Viewer)}
	const defaultTTL = 8 * time.Hour
	serials := map[string]bool{}
	for _, role := range []authz.Role{authz.Viewer, authz.Operator, authz.Admin} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t, 30*time.Second), "authorization", "Bearer "+tokens[role])
		asked := time.Now()
		got, err := k.client.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: name})
		if err != nil {
			t.Fatalf("%s: GetCluster: %v", role, err)
		}
		cert := kubeconfigCert(t, got.GetCluster().GetKubeconfig())
		if slices.Contains(cert.Subject.Organization, "system:masters") {
			t.Errorf("%s: the kubeconfig is system:masters (%v): every RBAC check is skipped for it", role, cert.Subject)
		}
		if want := []string{roleGroup[role]}; !slices.Equal(cert.Subject.Organization, want) {
			t.Errorf("%s: groups %v, want %v", role, cert.Subject.Organization, want)
		}
		user := "kaas-" + string(role)
		if role == authz.Admin {
			user = "admin"
		}
		if want := "plinth:" + user; cert.Subject.CommonName != want {
			t.Errorf("%s: user %q, want %q (the Plinth user, prefixed so it can never be a system: name)", role, cert.Subject.CommonName, want)
		}
		if life := cert.NotAfter.Sub(asked); life > defaultTTL+time.Minute || life < defaultTTL-time.Minute {
			t.Errorf("%s: the certificate is valid %v from now (until %v), want the default %v", role, life.Round(time.Minute), cert.NotAfter, defaultTTL)
		}
		if !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) || cert.IsCA {
			t.Errorf("%s: not a plain client certificate: %v, CA %v", role, cert.ExtKeyUsage, cert.IsCA)
		}
		if serials[cert.SerialNumber.String()] {
			t.Errorf("%s: the same certificate as another role's", role)
		}
		serials[cert.SerialNumber.String()] = true
	}

	// Each call issues a new certificate: nothing long-lived is kept to be handed out.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tokens[authz.Viewer])
	a, errA := k.client.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: name})
	b, errB := k.client.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: name})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if kubeconfigCert(t, a.GetCluster().GetKubeconfig()).SerialNumber.Cmp(kubeconfigCert(t, b.GetCluster().GetKubeconfig()).SerialNumber) == 0 {
		t.Error("two GetCluster calls answered the same certificate")
	}

	// CNCT's scripts: `curl …/api/v1/cluster?name=… | jq -r .cluster.kubeconfig` with a viewer's token.
	_, v := rest(t, k.RESTAddr(), tokens[authz.Viewer], "GET", "/api/v1/cluster?name="+name, "")
	kc, _ := v["cluster"].(map[string]any)["kubeconfig"].(string)
	if cert := kubeconfigCert(t, kc); !slices.Equal(cert.Subject.Organization, []string{"plinth:viewers"}) {
		t.Errorf("REST: a viewer's kubeconfig is in %v, want plinth:viewers", cert.Subject.Organization)
	}
}
