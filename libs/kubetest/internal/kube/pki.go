// Package kube holds what kubetest's per-test control planes and kubelocal's single-node
// cluster both need: a throw-away PKI as files the components read, and readiness probes.
package kube

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
	"strings"
	"time"
)

// User is one identity of the apiserver's token file.
type User struct {
	Name   string
	Groups []string
}

// PKIOptions say what to issue.
type PKIOptions struct {
	// Dir receives every file.
	Dir string
	// CAName is the CA's common name.
	CAName string
	// ServingIPs are the apiserver serving certificate's IP SANs (its own addresses and the
	// `kubernetes` Service's ClusterIP); its DNS SANs are localhost and the Service's names.
	ServingIPs []net.IP
	// Users each get a bearer token in the token file.
	Users []User
	// KubeletClient also issues the client pair the apiserver shows kubelets (system:masters).
	KubeletClient bool
	// Validity is how long the certificates last (backdated an hour against clock skew).
	Validity time.Duration
}

// PKI is the key material of one cluster.
type PKI struct {
	CAPEM     []byte
	CAFile    string
	CAKeyFile string
	CertFile  string // apiserver serving certificate, signed by the CA
	KeyFile   string
	SAKeyFile string // service-account token signing key (private)
	SAPubFile string // and its public half, for verification
	TokenFile string // --token-auth-file
	// KubeletClientCert and -Key are the apiserver's client pair towards kubelets, when asked.
	KubeletClientCert string
	KubeletClientKey  string
	// Tokens maps each user's name to its bearer token.
	Tokens   map[string]string
	CertPool *x509.CertPool
}

// NewPKI writes a CA, a serving certificate for the apiserver, a service-account key pair, a
// token file and, when asked, the kubelet client pair into o.Dir.
func NewPKI(o PKIOptions) (*PKI, error) {
	dir := o.Dir
	p := &PKI{
		CAFile:    filepath.Join(dir, "ca.crt"),
		CAKeyFile: filepath.Join(dir, "ca.key"),
		CertFile:  filepath.Join(dir, "apiserver.crt"),
		KeyFile:   filepath.Join(dir, "apiserver.key"),
		SAKeyFile: filepath.Join(dir, "sa.key"),
		SAPubFile: filepath.Join(dir, "sa.pub"),
		TokenFile: filepath.Join(dir, "tokens.csv"),
		Tokens:    map[string]string{},
	}
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(time.Hour + o.Validity)

	caKey, err := newKey(p.CAKeyFile)
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: o.CAName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := sign(caTemplate, caTemplate, &caKey.PublicKey, caKey, p.CAFile)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("kubetest: parse CA: %w", err)
	}
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p.CertPool = x509.NewCertPool()
	p.CertPool.AddCert(ca)

	issue := func(template *x509.Certificate, certFile, keyFile string) error {
		key, err := newKey(keyFile)
		if err != nil {
			return err
		}
		template.NotBefore, template.NotAfter = notBefore, notAfter
		template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		_, err = sign(template, ca, &key.PublicKey, caKey, certFile)
		return err
	}
	if err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: o.ServingIPs,
	}, p.CertFile, p.KeyFile); err != nil {
		return nil, err
	}
	if o.KubeletClient {
		p.KubeletClientCert = filepath.Join(dir, "apiserver-kubelet-client.crt")
		p.KubeletClientKey = filepath.Join(dir, "apiserver-kubelet-client.key")
		if err := issue(&x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, p.KubeletClientCert, p.KubeletClientKey); err != nil {
			return nil, err
		}
	}

	saKey, err := newKey(p.SAKeyFile)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("kubetest: service-account public key: %w", err)
	}
	if err := writePEM(p.SAPubFile, "PUBLIC KEY", saPub); err != nil {
		return nil, err
	}

	// token,user,uid,"group[,group…]" — the format of --token-auth-file.
	var lines strings.Builder
	for _, u := range o.Users {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("kubetest: token: %w", err)
		}
		token := hex.EncodeToString(secret)
		p.Tokens[u.Name] = token
		fmt.Fprintf(&lines, "%s,%s,%s,%q\n", token, u.Name, u.Name, strings.Join(u.Groups, ","))
	}
	if err := os.WriteFile(p.TokenFile, []byte(lines.String()), 0o600); err != nil {
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
