package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plinth-dev/plinth/libs/platform/mtls"
)

// serve runs one gRPC server, as the plugin does, on the generated pairs' mutual-TLS TCP
// listener and a plaintext unix socket.
func serve(t *testing.T, g Generated) (tcpAddr, socket string) {
	t.Helper()
	srvTLS, err := mtls.NewServer(mtls.ServerFiles{Cert: g.ServerCert, Key: g.ServerKey, ClientCA: g.ClientCert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	socket = filepath.Join(t.TempDir(), "p.sock")
	unix, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(srvTLS.Listener(tcp)) }()
	go func() { _ = s.Serve(unix) }()
	t.Cleanup(s.Stop)
	return tcp.Addr().String(), socket
}

func check(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	return err
}

// operatorTLS is what CloudNativePG's operator builds from the two Secrets: the client pair,
// the server certificate as the only root, the Service name as server name, TLS 1.3.
func operatorTLS(t *testing.T, g Generated, serverName string) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(g.ClientCert, g.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := os.ReadFile(g.ServerCert)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return &tls.Config{ServerName: serverName, RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
}

func TestMutualTLSLikeTheOperator(t *testing.T) {
	g, err := Generate(t.TempDir(), []string{"cnpgi-plugin", "127.0.0.1"}, 24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	addr, socket := serve(t, g)

	if err := check(addr, credentials.NewTLS(operatorTLS(t, g, "cnpgi-plugin"))); err != nil {
		t.Fatalf("the operator's client certificate is refused: %v", err)
	}
	noCert := operatorTLS(t, g, "cnpgi-plugin")
	noCert.Certificates = nil
	if err := check(addr, credentials.NewTLS(noCert)); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	old := operatorTLS(t, g, "cnpgi-plugin")
	old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	if err := check(addr, credentials.NewTLS(old)); err == nil {
		t.Fatal("TLS 1.2 was accepted; the plugin speaks TLS 1.3 only")
	}
	other, err := Generate(t.TempDir(), []string{"x"}, 24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	stranger := operatorTLS(t, g, "cnpgi-plugin")
	stranger.Certificates = operatorTLS(t, other, "x").Certificates
	if err := check(addr, credentials.NewTLS(stranger)); err == nil {
		t.Fatal("a client certificate the plugin does not trust was accepted")
	}
	if err := check(addr, credentials.NewTLS(operatorTLS(t, g, "elsewhere"))); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server name outside the certificate: %v", err)
	}
	if err := check(addr, insecure.NewCredentials()); err == nil {
		t.Fatal("plaintext was served on the TLS listener")
	}
	if err := check("unix://"+socket, insecure.NewCredentials()); err != nil {
		t.Fatalf("the unix socket must stay plaintext (the instance manager dials it so): %v", err)
	}
}

// TestRotationNeedsNoRestart: new files on disk serve the next connection.
func TestRotationNeedsNoRestart(t *testing.T) {
	dir := t.TempDir()
	g, err := Generate(dir, []string{"127.0.0.1"}, 24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, g)
	before := operatorTLS(t, g, "127.0.0.1")
	if _, err := Generate(dir, []string{"127.0.0.1"}, 24*time.Hour, false); err == nil {
		t.Fatal("gen-certs overwrote certificates without -force")
	}
	time.Sleep(10 * time.Millisecond) // a distinct modification time on coarse clocks
	if _, err := Generate(dir, []string{"127.0.0.1"}, 24*time.Hour, true); err != nil {
		t.Fatal(err)
	}
	if err := check(addr, credentials.NewTLS(operatorTLS(t, g, "127.0.0.1"))); err != nil {
		t.Fatalf("the rotated pair is not served: %v", err)
	}
	if err := check(addr, credentials.NewTLS(before)); err == nil {
		t.Fatal("the replaced pair is still trusted")
	}
	for _, k := range []string{g.ServerKey, g.ClientKey} {
		if fi, err := os.Stat(k); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; keys must be private", k, fi.Mode(), err)
		}
	}
}
