// Package pki makes and keeps a cluster's key material: its certificate authorities (one for
// Kubernetes, one for etcd, so that a node's certificate never opens etcd), the
// service-account signing key and a kubeadm bootstrap token; it issues the certificates
// machines and users need, each when it is needed, and builds kubeconfigs. Everything is
// sealed (AES-256-GCM) before it is stored.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Lifetimes: CAs outlive any cluster kaas is expected to keep; leaf certificates are renewed
// by the bootstrap that issues them (every deploy and upgrade issues fresh ones).
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	LeafLifetime = 365 * 24 * time.Hour
	backdate     = time.Hour // against clock skew between kaas and the machines
	// SelfLifetime bounds the certificates kaas issues to itself for each connection to a
	// cluster (and to a first control-plane machine's bootstrap): a copy that leaks is
	// worth an hour.
	SelfLifetime = time.Hour
	// SelfUserName is kaas's own user in its clusters.
	SelfUserName = "plinth:kaas"
	// MastersGroup is Kubernetes' superuser group, which RBAC never checks: only kaas's own
	// short-lived certificates are in it (as kubeadm's super-admin.conf), never a user's.
	MastersGroup = "system:masters"
)

// KeyPair is a PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM []byte `json:"cert"`
	KeyPEM  []byte `json:"key"`
}

// Cluster is one cluster's key material.
type Cluster struct {
	CA     KeyPair `json:"ca"`
	EtcdCA KeyPair `json:"etcd_ca"`
	// FrontProxyCA signs the API server's aggregation-layer client certificate (kubeadm's
	// front-proxy-ca); every control-plane machine needs the same one.
	FrontProxyCA KeyPair `json:"front_proxy_ca"`
	// ServiceAccountKey signs service-account tokens (PEM EC private key).
	ServiceAccountKey []byte `json:"sa_key"`
	// Clusters made before issue #36 also hold an "admin" key pair (system:masters, a year):
	// it is no longer read, used or handed out.
	// BootstrapToken lets kubeadm join machines ("abcdef.0123456789abcdef").
	BootstrapToken string `json:"bootstrap_token"`
}

// New makes the key material of a cluster called name.
func New(name string) (*Cluster, error) {
	c := &Cluster{}
	var err error
	if c.CA, err = newCA(name + "-ca"); err != nil {
		return nil, err
	}
	if c.EtcdCA, err = newCA(name + "-etcd-ca"); err != nil {
		return nil, err
	}
	if c.FrontProxyCA, err = newCA(name + "-front-proxy-ca"); err != nil {
		return nil, err
	}
	sa, err := newKey()
	if err != nil {
		return nil, err
	}
	if c.ServiceAccountKey, err = keyPEM(sa); err != nil {
		return nil, err
	}
	if c.BootstrapToken, err = bootstrapToken(); err != nil {
		return nil, err
	}
	return c, nil
}

// CertSpec describes a certificate to issue.
type CertSpec struct {
	CommonName string
	Orgs       []string
	DNSNames   []string
	IPs        []net.IP
	Server     bool // TLS server authentication
	Client     bool // TLS client authentication
	// NotAfter ends the certificate's validity; zero means LeafLifetime from now.
	NotAfter time.Time
}

// Self is a client certificate for kaas itself, valid SelfLifetime: what kaas reads and
// changes its clusters' API with.
func (c *Cluster) Self() (KeyPair, error) {
	return c.Issue(CertSpec{CommonName: SelfUserName, Orgs: []string{MastersGroup}, Client: true, NotAfter: time.Now().Add(SelfLifetime)})
}

// Issue signs a certificate for spec with the cluster CA.
func (c *Cluster) Issue(spec CertSpec) (KeyPair, error) { return issue(c.CA, spec) }

// IssueEtcd signs a certificate for spec with the etcd CA.
func (c *Cluster) IssueEtcd(spec CertSpec) (KeyPair, error) { return issue(c.EtcdCA, spec) }

// ServiceAccountPublicKey is the PEM public half of the service-account key.
func (c *Cluster) ServiceAccountPublicKey() ([]byte, error) {
	key, err := parseKey(c.ServiceAccountKey)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// CACertHash is kubeadm's discovery hash of the cluster CA: "sha256:" and the hex SHA-256
// of its SubjectPublicKeyInfo.
func (c *Cluster) CACertHash() (string, error) {
	cert, err := parseCert(c.CA.CertPEM)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func newCA(cn string) (KeyPair, error) {
	return create(&x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, time.Now().Add(CALifetime), nil, nil)
}

func issue(ca KeyPair, spec CertSpec) (KeyPair, error) {
	caCert, err := parseCert(ca.CertPEM)
	if err != nil {
		return KeyPair{}, err
	}
	caKey, err := parseKey(ca.KeyPEM)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: spec.CommonName, Organization: spec.Orgs},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:    spec.DNSNames,
		IPAddresses: spec.IPs,
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	notAfter := spec.NotAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(LeafLifetime)
	}
	return create(tmpl, notAfter, caCert, caKey)
}

// create makes a key and its certificate from tmpl (serial and validity filled in, valid
// until notAfter), signed by parentKey, or self-signed when parent is nil.
func create(tmpl *x509.Certificate, notAfter time.Time, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial(), time.Now().Add(-backdate), notAfter
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issue certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	kp, err := keyPEM(key)
	return KeyPair{CertPEM: certPEM(der), KeyPEM: kp}, err
}

// P-256 keys: fast to make, accepted by etcd and every Kubernetes component for serving,
// client authentication and service-account tokens (ES256).
func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func parseCert(p []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("pki: not a PEM certificate")
	}
	return x509.ParseCertificate(b.Bytes)
}

func parseKey(p []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "EC PRIVATE KEY" {
		return nil, errors.New("pki: not a PEM EC private key")
	}
	return x509.ParseECPrivateKey(b.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the OS has no entropy source: nothing can work
	}
	return n
}

// bootstrapToken is kubeadm's token format: [a-z0-9]{6}.[a-z0-9]{16}.
func bootstrapToken() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	out := make([]byte, 0, 23)
	for i, c := range b {
		if i == 6 {
			out = append(out, '.')
		}
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out), nil
}
