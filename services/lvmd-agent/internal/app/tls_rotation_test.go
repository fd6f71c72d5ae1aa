package app_test

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// TestMutualTLSRotation: certificates rotated on disk (a new certs volume, a renewed Secret)
// serve the next connection without a restart, and the replaced client certificate is
// refused from then on.
func TestMutualTLSRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	dir := filepath.Join(t.TempDir(), "lvmd-agent")
	p := mtlstest.Write(t, dir, "lvmd-agent")
	cfg := e.config(t, func(c *app.Config) {
		c.TLSAddr, c.TLSCert, c.TLSKey, c.TLSClientCA = "127.0.0.1:0", p.ServerCert, p.ServerKey, p.ClientCert
	})
	e.start(t, cfg)
	addr := logged(t, e, "serving mutual TLS", "tls_addr")
	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, err = lvmdpb.NewVGServiceClient(conn).GetFreeBytes(ctxT(t), &lvmdpb.GetFreeBytesRequest{})
		return err
	}
	// What Envoy and the gateway do: the client pair, server.crt as the only root, the
	// name lvmd-agent.
	client, err := mtls.NewClient(mtls.ClientFiles{Cert: p.ClientCert, Key: p.ClientKey, ServerCA: p.ServerCert, ServerName: "lvmd-agent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, ServerName: "lvmd-agent",
		RootCAs: p.ServerRoots(t), Certificates: []tls.Certificate{p.ClientPair(t)}})
	if err := call(client.Credentials()); err != nil {
		t.Fatalf("the client pair was refused: %v", err)
	}

	mtlstest.Write(t, dir, "lvmd-agent")
	if err := call(client.Credentials()); err != nil {
		t.Fatalf("the rotated pairs are not served: %v", err)
	}
	if err := call(before); err == nil {
		t.Fatal("the replaced client certificate is still accepted")
	}
}

// TestMutualTLSBadFilesFailTheStart: a file that cannot be used fails the start with the
// setting that names it.
func TestMutualTLSBadFilesFailTheStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	p := mtlstest.Write(t, t.TempDir(), "lvmd-agent")
	missing := filepath.Join(t.TempDir(), "missing.crt")
	log, err := telemetry.NewLogger(e.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cert, key, ca, want string
	}{
		{p.ServerCert, p.ClientKey, p.ClientCert, "PLINTH_LVMD_TLS_CERT/KEY: tls: private key does not match public key"},
		{missing, p.ServerKey, p.ClientCert, "PLINTH_LVMD_TLS_CERT/KEY: open " + missing},
		{p.ServerCert, p.ServerKey, missing, "PLINTH_LVMD_TLS_CLIENT_CA: open " + missing},
		{p.ServerCert, p.ServerKey, p.ServerKey, "PLINTH_LVMD_TLS_CLIENT_CA: " + p.ServerKey + " holds no PEM certificate"},
	} {
		cfg := e.config(t, func(c *app.Config) {
			c.TLSAddr, c.TLSCert, c.TLSKey, c.TLSClientCA = "127.0.0.1:0", tt.cert, tt.key, tt.ca
		})
		svc, err := app.Open(context.Background(), cfg, log)
		if err == nil {
			_ = svc.Close(context.Background())
			t.Errorf("started with %s", tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %q, want %q", err, tt.want)
		}
	}
}
