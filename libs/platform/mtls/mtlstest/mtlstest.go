// Package mtlstest writes real mutual-TLS certificates for tests, laid out as Plinth's certs
// volume: server.crt, server.key, client.crt and client.key in one directory.
package mtlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pairs are the four files of one mutual-TLS link.
type Pairs struct {
	Dir                                          string
	ServerCert, ServerKey, ClientCert, ClientKey string
}

// Write writes into dir (made if missing) a self-signed server certificate valid for names
// (DNS names or IP addresses) and a self-signed client certificate, with their keys,
// replacing what is there. Each file is renamed into place, so a reader never sees half of
// one.
func Write(t testing.TB, dir string, names ...string) Pairs {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := Pairs{Dir: dir,
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	server := &x509.Certificate{Subject: pkix.Name{CommonName: names[0]},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			server.IPAddresses = append(server.IPAddresses, ip)
		} else {
			server.DNSNames = append(server.DNSNames, n)
		}
	}
	client := &x509.Certificate{Subject: pkix.Name{CommonName: "test client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	selfSign(t, server, p.ServerCert, p.ServerKey)
	selfSign(t, client, p.ClientCert, p.ClientKey)
	return p
}

// ClientPair loads the client pair of p.
func (p Pairs) ClientPair(t testing.TB) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// ServerRoots is a pool of p's server certificate.
func (p Pairs) ServerRoots(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(p.ServerCert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("%s holds no certificate", p.ServerCert)
	}
	return pool
}

func selfSign(t testing.TB, tmpl *x509.Certificate, certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	writeAtomic(t, certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
