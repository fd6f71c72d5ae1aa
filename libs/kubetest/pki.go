package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
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

// pki is the throw-away key material of one cluster, as files the components read.
type pki struct {
	caPEM     []byte
	caFile    string
	caKeyFile string
	certFile  string // apiserver serving certificate, signed by the CA
	keyFile   string
	saKeyFile string // service-account token signing key (private)
	saPubFile string // and its public half, for verification
	token     string // the admin's bearer token
	tokenFile string // --token-auth-file
	certPool  *x509.CertPool
}

// newPKI writes a CA, a serving certificate for the loopback apiserver, a service-account
// key pair and a token file with the admin's token into dir.
func newPKI(dir string) (*pki, error) {
	p := &pki{
		caFile:    filepath.Join(dir, "ca.crt"),
		caKeyFile: filepath.Join(dir, "ca.key"),
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saKeyFile: filepath.Join(dir, "sa.key"),
		saPubFile: filepath.Join(dir, "sa.pub"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	// Backdated an hour against clock skew; a day outlives any test.
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(25 * time.Hour)

	caKey, err := newKey(p.caKeyFile)
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubetest-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTemplate, caTemplate, &caKey.PublicKey, caKey, p.caFile)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("kubetest: parse CA: %w", err)
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p.certPool = x509.NewCertPool()
	p.certPool.AddCert(ca)

	servingKey, err := newKey(p.keyFile)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(kubernetesSvcIP)},
	}
	if _, err := sign(serving, ca, &servingKey.PublicKey, caKey, p.certFile); err != nil {
		return nil, err
	}

	saKey, err := newKey(p.saKeyFile)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("kubetest: service-account public key: %w", err)
	}
	if err := writePEM(p.saPubFile, "PUBLIC KEY", saPub); err != nil {
		return nil, err
	}

	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("kubetest: token: %w", err)
	}
	p.token = hex.EncodeToString(secret)
	// token,user,uid,"group[,group…]" — the format of --token-auth-file.
	line := fmt.Sprintf("%s,%s,%s,%q\n", p.token, AdminUser, AdminUser, AdminGroup)
	if err := os.WriteFile(p.tokenFile, []byte(line), 0o600); err != nil {
		return nil, fmt.Errorf("kubetest: token file: %w", err)
	}
	return p, nil
}

// newKey makes a P-256 key (fast to generate, accepted by every component for serving,
// signing certificates and signing service-account tokens) and writes it to path.
func newKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubetest: generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("kubetest: marshal key: %w", err)
	}
	return key, writePEM(path, "EC PRIVATE KEY", der)
}

// sign issues template, signed by parent's key, and writes it to path as PEM.
func sign(template, parent *x509.Certificate, pub any, parentKey *ecdsa.PrivateKey, path string) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("kubetest: serial: %w", err)
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, parentKey)
	if err != nil {
		return nil, fmt.Errorf("kubetest: certificate %s: %w", template.Subject.CommonName, err)
	}
	return der, writePEM(path, "CERTIFICATE", der)
}

func writePEM(path, blockType string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("kubetest: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
