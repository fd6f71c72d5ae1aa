package app_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/mtls"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// TestBackendMutualTLS: lvmd-agent on a TCP port that requires the client certificate of the
// certs volume (as in compose, where its socket is root's) is reached through the gateway
// with PLINTH_GATEWAY_BACKEND_TLS_DIR, and not without it.
func TestBackendMutualTLS(t *testing.T) {
	s := newSuite(t)
	certs := t.TempDir()
	// The server certificate names lvmd-agent only, not the address dialled: the gateway
	// must verify the backend's name, as Envoy's cluster does (sni and SAN lvmd-agent).
	p := mtlstest.Write(t, filepath.Join(certs, "lvmd-agent"), "lvmd-agent")
	srvTLS, err := mtls.NewServer(mtls.ServerFiles{Cert: p.ServerCert, Key: p.ServerKey, ClientCA: p.ClientCert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	gs := rec.server(t)
	lvmdpb.RegisterVGServiceServer(gs, &vgBackend{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(srvTLS.Listener(lis)) }()
	t.Cleanup(gs.Stop)
	backend := "PLINTH_GATEWAY_BACKEND_LVMD_AGENT=" + lis.Addr().String()

	g := s.gateway(t, app.Options{}, backend, "PLINTH_GATEWAY_BACKEND_TLS_DIR="+certs)
	token := login(t, g.conn) // auth, a host:port backend without a pair, stays plaintext
	resp, err := lvmdpb.NewVGServiceClient(g.conn).GetFreeBytes(bearer(ctxT(t), token), &lvmdpb.GetFreeBytesRequest{})
	if err != nil || resp.GetFreeBytes() != freeBytes {
		t.Fatalf("through the gateway over mutual TLS: %v %v", resp, err)
	}
	if rec.take() == nil {
		t.Fatal("the call did not reach the TLS backend")
	}
	if line := logLine(s.logs.String(), "backends dialled with mutual TLS"); !strings.Contains(line, `"backends":["lvmd-agent"]`) {
		t.Errorf("the start does not log which backends use mutual TLS:\n%s", s.logs.String())
	}

	plain := s.gateway(t, app.Options{}, backend)
	_, err = lvmdpb.NewVGServiceClient(plain.conn).GetFreeBytes(bearer(ctxT(t), token), &lvmdpb.GetFreeBytesRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("without PLINTH_GATEWAY_BACKEND_TLS_DIR: %v, want Unavailable", err)
	}
	if rec.take() != nil {
		t.Fatal("a plaintext call reached the TLS backend")
	}
}

// logLine is the first line of logs with message msg, "" when none.
func logLine(logs, msg string) string {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"msg":"`+msg+`"`) {
			return line
		}
	}
	return ""
}
