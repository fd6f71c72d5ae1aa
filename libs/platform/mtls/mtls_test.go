package mtls_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"
)

// serve runs a gRPC health server behind s's listener on 127.0.0.1 and records the SNI of
// every handshake.
func serve(t *testing.T, s *mtls.Server) (addr string, sni func() []string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var names []string
	cfg := s.Config()
	inner := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		names = append(names, h.ServerName)
		mu.Unlock()
		return inner(h)
	}
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(tls.NewListener(lis, cfg)) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), names...) }
}

func newServer(t *testing.T, p mtlstest.Pairs) *mtls.Server {
	t.Helper()
	s, err := mtls.NewServer(mtls.ServerFiles{Cert: p.ServerCert, Key: p.ServerKey, ClientCA: p.ClientCert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t *testing.T, p mtlstest.Pairs, name string) *mtls.Client {
	t.Helper()
	c, err := mtls.NewClient(mtls.ClientFiles{Cert: p.ClientCert, Key: p.ClientKey, ServerCA: p.ServerCert, ServerName: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fixed is a client that loaded p once (what a client without reload holds).
func fixed(t *testing.T, p mtlstest.Pairs, name string) credentials.TransportCredentials {
	return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, ServerName: name,
		RootCAs: p.ServerRoots(t), Certificates: []tls.Certificate{p.ClientPair(t)}})
}

// check makes one call on a new connection, so every check is a new handshake.
func check(addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestMutualTLS(t *testing.T) {
	p := mtlstest.Write(t, t.TempDir(), "backend")
	addr, sni := serve(t, newServer(t, p))

	// The address is an IP the certificate does not name: the server name is what counts.
	if err := check(addr, newClient(t, p, "backend").Credentials()); err != nil {
		t.Fatalf("the client pair is refused: %v", err)
	}
	if got := sni(); len(got) != 1 || got[0] != "backend" {
		t.Fatalf("SNI %q, want the server name", got)
	}
	if err := check(addr, newClient(t, p, "elsewhere").Credentials()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server name the certificate does not carry: %v", err)
	}
	other := mtlstest.Write(t, t.TempDir(), "backend")
	if err := check(addr, mtlsClientOf(t, p, other)); err == nil {
		t.Fatal("a server the client CA file does not hold was trusted")
	}
	if err := check(addr, fixed(t, other, "backend")); err == nil {
		t.Fatal("a client certificate the server does not trust was accepted")
	}
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: "backend", RootCAs: p.ServerRoots(t)}
	if err := check(addr, credentials.NewTLS(noCert)); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	old := &tls.Config{MaxVersion: tls.VersionTLS12, ServerName: "backend", RootCAs: p.ServerRoots(t), Certificates: []tls.Certificate{p.ClientPair(t)}}
	if err := check(addr, credentials.NewTLS(old)); err == nil {
		t.Fatal("TLS 1.2 was accepted")
	}
	if err := check(addr, insecure.NewCredentials()); err == nil {
		t.Fatal("plaintext was served")
	}
	// A plain tls.Config of the client, as Envoy or another client would use it.
	cfg := newClient(t, p, "backend").Config()
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("the client's tls.Config: %v", err)
	}
	st := conn.ConnectionState()
	conn.Close()
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "h2" {
		t.Fatalf("version %x, ALPN %q: want TLS 1.3 and h2", st.Version, st.NegotiatedProtocol)
	}
}

// mtlsClientOf presents p's client pair but trusts other's server certificate.
func mtlsClientOf(t *testing.T, p, other mtlstest.Pairs) credentials.TransportCredentials {
	t.Helper()
	c, err := mtls.NewClient(mtls.ClientFiles{Cert: p.ClientCert, Key: p.ClientKey, ServerCA: other.ServerCert, ServerName: "backend"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Credentials()
}

// TestRotation: both ends read their files again when they change, so new certificates
// serve the next connection: the server presents and trusts the new ones, the client
// presents and trusts the new ones; nobody trusts the replaced ones.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	p := mtlstest.Write(t, dir, "backend")
	addr, _ := serve(t, newServer(t, p))
	client := newClient(t, p, "backend").Credentials()
	before := fixed(t, p, "backend")
	if err := check(addr, client); err != nil {
		t.Fatal(err)
	}

	mtlstest.Write(t, dir, "backend") // the same files, new certificates and keys
	if err := check(addr, fixed(t, p, "backend")); err != nil {
		t.Fatalf("the server does not serve the rotated pair: %v", err)
	}
	if err := check(addr, before); err == nil {
		t.Fatal("the server still trusts the replaced client certificate")
	}
	if err := check(addr, client); err != nil {
		t.Fatalf("the client does not present or trust the rotated pair: %v", err)
	}
}

// TestBrokenRotationKeepsTheLastGoodFiles: a file caught half-written is not served; the
// previous pair is, until the files are whole again.
func TestBrokenRotationKeepsTheLastGoodFiles(t *testing.T) {
	dir := t.TempDir()
	p := mtlstest.Write(t, dir, "backend")
	addr, _ := serve(t, newServer(t, p))
	client := newClient(t, p, "backend").Credentials()
	good := fixed(t, p, "backend")
	if err := os.WriteFile(p.ServerCert, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := check(addr, good); err != nil {
		t.Fatalf("a broken server file stopped the previous pair: %v", err)
	}
	if err := check(addr, client); err != nil {
		t.Fatalf("a broken file stopped the client's previous pair: %v", err)
	}
	mtlstest.Write(t, dir, "backend")
	if err := check(addr, client); err != nil {
		t.Fatalf("the whole files after a broken one are not loaded: %v", err)
	}
	if err := check(addr, good); err == nil {
		t.Fatal("the replaced pair is still trusted")
	}
}

func TestBadFilesFailTheStart(t *testing.T) {
	p := mtlstest.Write(t, t.TempDir(), "h")
	missing := filepath.Join(t.TempDir(), "missing.crt")
	for _, tt := range []struct {
		name string
		f    mtls.ServerFiles
		role mtls.Role
		want string
	}{
		{"missing CA", mtls.ServerFiles{Cert: p.ServerCert, Key: p.ServerKey}, "", "are all required"},
		{"key mismatch", mtls.ServerFiles{Cert: p.ServerCert, Key: p.ClientKey, ClientCA: p.ClientCert}, mtls.ServerPair, "tls: server certificate " + p.ServerCert + " and key " + p.ClientKey + ": "},
		{"CA absent", mtls.ServerFiles{Cert: p.ServerCert, Key: p.ServerKey, ClientCA: missing}, mtls.ClientCA, "tls: client CA: open " + missing},
		{"CA not PEM", mtls.ServerFiles{Cert: p.ServerCert, Key: p.ServerKey, ClientCA: p.ServerKey}, mtls.ClientCA, "tls: client CA " + p.ServerKey + " holds no PEM certificate"},
	} {
		_, err := mtls.NewServer(tt.f, nil)
		var fe *mtls.FileError
		if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.role != "" && (!errors.As(err, &fe) || fe.Role != tt.role)) {
			t.Errorf("%s: %v, want %q (%s)", tt.name, err, tt.want, tt.role)
		}
	}
	_, err := mtls.NewClient(mtls.ClientFiles{Cert: p.ClientCert, Key: p.ClientKey, ServerCA: p.ClientKey, ServerName: "h"}, nil)
	var fe *mtls.FileError
	if !errors.As(err, &fe) || fe.Role != mtls.ServerCA || !errors.Is(err, mtls.ErrNoCertificate) {
		t.Errorf("client with a key as CA: %v", err)
	}
	if _, err := mtls.NewClient(mtls.ClientFiles{Cert: p.ClientCert, Key: p.ClientKey, ServerCA: p.ServerCert}, nil); err == nil {
		t.Error("a client without a server name was built")
	}
}
