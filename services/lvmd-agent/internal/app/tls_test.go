package app_test

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/app"
)

// TestMutualTLSPort serves the same services on a TCP port that requires a client
// certificate signed by the configured CA, beside the unix socket.
func TestMutualTLSPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{size: 2 << 30})
	dir := t.TempDir()
	link := mtlstest.Write(t, filepath.Join(dir, "link"), "lvmd", "127.0.0.1")
	stranger := mtlstest.Write(t, filepath.Join(dir, "stranger"), "lvmd")
	cfg := e.config(t, func(c *app.Config) {
		c.TLSAddr, c.TLSCert, c.TLSKey, c.TLSClientCA = "127.0.0.1:0", link.ServerCert, link.ServerKey, link.ClientCert
	})
	e.start(t, cfg)
	addr := logged(t, e, "serving mutual TLS", "tls_addr")
	roots := link.ServerRoots(t)
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
	if err := call([]tls.Certificate{link.ClientPair(t)}); err != nil {
		t.Fatalf("the client certificate was refused: %v", err)
	}
	if err := call(nil); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	if err := call([]tls.Certificate{stranger.ClientPair(t)}); err == nil {
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
