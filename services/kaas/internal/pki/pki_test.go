package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestKeyMaterialChainsAndSeals(t *testing.T) {
	box, err := NewBox(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	v := NewVault(box)
	sealed, err := v.New("prod")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("PRIVATE KEY")) || bytes.Contains(sealed, []byte("CERTIFICATE")) {
		t.Fatal("sealed key material is readable")
	}
	if _, err := v.Open(sealed, "other"); err == nil {
		t.Fatal("sealed material opened for another cluster")
	}
	c, err := v.Open(sealed, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(c.BootstrapToken) {
		t.Fatalf("bootstrap token %q", c.BootstrapToken)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.CA.CertPEM)
	etcdRoots := x509.NewCertPool()
	etcdRoots.AppendCertsFromPEM(c.EtcdCA.CertPEM)
	serving, err := c.Issue(CertSpec{CommonName: "kube-apiserver", IPs: []net.IP{net.ParseIP("10.213.0.7")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	leaf := parse(t, serving)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: etcdRoots}); err == nil {
		t.Fatal("a cluster certificate must not verify against the etcd CA")
	}
	if err := leaf.VerifyHostname("10.213.0.7"); err != nil {
		t.Fatal(err)
	}
	self, err := c.Self()
	if err != nil {
		t.Fatal(err)
	}
	if s := parse(t, self); s.Subject.CommonName != SelfUserName || s.Subject.Organization[0] != MastersGroup ||
		s.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || time.Until(s.NotAfter) > SelfLifetime {
		t.Fatalf("kaas's own certificate %v until %v", s.Subject, s.NotAfter)
	}
	if h, err := c.CACertHash(); err != nil || !strings.HasPrefix(h, "sha256:") || len(h) != 71 {
		t.Fatalf("CA hash %q %v", h, err)
	}

	until := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	kc, err := v.Kubeconfig(sealed, "prod", "10.213.0.7:6443", CertSpec{CommonName: "plinth:ann", Orgs: []string{"plinth:viewers"}, Client: true, NotAfter: until})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.213.0.7:6443" || !bytes.Equal(rc.CAData, c.CA.CertPEM) || len(rc.CertData) == 0 {
		t.Fatalf("rest config %+v", rc)
	}
	user := parse(t, KeyPair{CertPEM: rc.CertData, KeyPEM: rc.KeyData})
	if user.Subject.CommonName != "plinth:ann" || len(user.Subject.Organization) != 1 || user.Subject.Organization[0] != "plinth:viewers" || !user.NotAfter.Equal(until) {
		t.Fatalf("user certificate %v until %v", user.Subject, user.NotAfter)
	}
}

func parse(t *testing.T, kp KeyPair) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", strings.Repeat("ab", 32)} {
		if k, err := ParseKey(s); err != nil || len(k) != 32 {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "short", strings.Repeat("zz", 32)} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
