package access

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
)

func userCert(t *testing.T, kc []byte) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestKubeconfigFollowsTheCaller: the role picks the group, the configured lifetime bounds the
// certificate and so does the caller's token, and a caller of no known role gets nothing.
func TestKubeconfigFollowsTheCaller(t *testing.T) {
	box, err := pki.NewBox(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCredentials(pki.NewVault(box), 2*time.Hour)
	sealed, err := c.New("prod")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		who   cluster.Caller
		group string
		until time.Time
	}{
		{cluster.Caller{ID: "1", Name: "ann", Role: authz.Viewer}, "plinth:viewers", now.Add(2 * time.Hour)},
		{cluster.Caller{ID: "2", Name: "bob", Role: authz.Operator, Expires: now.Add(10 * time.Minute)}, "plinth:operators", now.Add(10 * time.Minute)},
		{cluster.Caller{ID: "3", Name: "cy", Role: authz.Admin, Expires: now.Add(48 * time.Hour)}, "plinth:admins", now.Add(2 * time.Hour)},
	}
	for _, tc := range cases {
		kc, err := c.Kubeconfig(sealed, "prod", "10.0.0.1:6443", tc.who)
		if err != nil {
			t.Fatal(err)
		}
		cert := userCert(t, kc)
		if cert.Subject.CommonName != "plinth:"+tc.who.Name || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != tc.group {
			t.Errorf("%s: %v", tc.who.Role, cert.Subject)
		}
		if d := cert.NotAfter.Sub(tc.until); d > 2*time.Second || d < -2*time.Second {
			t.Errorf("%s: valid until %v, want %v", tc.who.Role, cert.NotAfter, tc.until)
		}
	}
	for _, role := range []authz.Role{"", "root", "system:masters"} {
		if kc, err := c.Kubeconfig(sealed, "prod", "10.0.0.1:6443", cluster.Caller{Name: "x", Role: role}); err != nil || kc != nil {
			t.Errorf("role %q got a kubeconfig (%v)", role, err)
		}
	}
	if len(Bindings()) != len(grants) {
		t.Fatal("a role without its binding")
	}
	for _, b := range Bindings() {
		if b.Name != b.Subjects[0].Name || b.RoleRef.Name == "" || b.Subjects[0].Kind != "Group" {
			t.Errorf("binding %s: %v → %v", b.Name, b.Subjects, b.RoleRef)
		}
	}
}
