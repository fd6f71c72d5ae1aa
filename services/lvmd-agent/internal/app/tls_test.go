package app_test

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
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// pair is a self-signed certificate and its key, written as PEM files.
type pair struct {
	cert       *x509.Certificate
	certFile   string
	keyFile    string
	tlsPair    tls.Certificate
	serverName string
}

func selfSigned(t *testing.T, dir, name string, server bool) pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{name}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	p := pair{certFile: filepath.Join(dir, name+".crt"), keyFile: filepath.Join(dir, name+".key"), serverName: name}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := os.WriteFile(p.certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	p.cert, _ = x509.ParseCertificate(der)
	p.tlsPair, _ = tls.X509KeyPair(certPEM, keyPEM)
	return p
}

// TestMutualTLSPort serves the same services on a TCP port that requires a client
// certificate signed by the configured CA, beside the unix socket.
func TestMutualTLSPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	dir := t.TempDir()
	srv, client, stranger := selfSigned(t, dir, "lvmd", true), selfSigned(t, dir, "node-plugin", false), selfSigned(t, dir, "stranger", false)
	cfg := e.config(t, func(c *app.Config) {
		c.TLSAddr, c.TLSCert, c.TLSKey, c.TLSClientCA = "127.0.0.1:0", srv.certFile, srv.keyFile, client.certFile
	})
	e.start(t, cfg)
	addr := logged(t, e, "serving mutual TLS", "tls_addr")
	roots := x509.NewCertPool()
	roots.AddCert(srv.cert)
	call := func(certs []tls.Certificate) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			RootCAs: roots, ServerName: "lvmd", Certificates: certs, MinVersion: tls.VersionTLS13})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = lvmdpb.NewVGServiceClient(conn).GetFreeBytes(ctxT(t), &lvmdpb.GetFreeBytesRequest{})
		return err
	}
	if err := call([]tls.Certificate{client.tlsPair}); err != nil {
		t.Fatalf("the client certificate was refused: %v", err)
	}
	if err := call(nil); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	if err := call([]tls.Certificate{stranger.tlsPair}); err == nil {
		t.Fatal("a certificate from another CA was served")
	}
}

// logged waits for a log line with msg and returns its value of key.
func logged(t *testing.T, e *env, msg, key string) string {
	t.Helper()
	var v string
	eventually(t, ctxT(t), "log line "+msg, func() bool {
		for _, line := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(line, `"msg":"`+msg+`"`) {
				if _, rest, ok := strings.Cut(line, `"`+key+`":"`); ok {
					v, _, _ = strings.Cut(rest, `"`)
					return true
				}
			}
		}
		return false
	})
	return v
}
