package upstreamtest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/identity"
	"github.com/cloudnative-pg/cnpg-i/pkg/operator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// TestOperatorOverMutualTLS serves the operator on TCP with TLS 1.3 and required client
// certificates, from files `cnpgi-plugin gen-certs` wrote, and dials it the way CloudNativePG
// dials a remote plugin: the client Secret's pair, the server Secret's certificate as the only
// root, the Service name as the server name.
func TestOperatorOverMutualTLS(t *testing.T) {
	t.Parallel()
	o := runAs(t)
	certs := filepath.Join(home(t, o), "certs")
	genCerts(t, o, certs, "cnpgi-plugin,127.0.0.1")
	p := startPlugin(t, 1, "PLINTH_CNPGI_TLS_ADDR=127.0.0.1:0",
		"PLINTH_CNPGI_TLS_CERT="+filepath.Join(certs, "server.crt"), "PLINTH_CNPGI_TLS_KEY="+filepath.Join(certs, "server.key"),
		"PLINTH_CNPGI_TLS_CLIENT_CA="+filepath.Join(certs, "client.crt"))
	addr := p.logValue(t, "serving mutual TLS for the operator", "tls_addr")
	ctx := ctxT(t)

	pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "client.crt"), filepath.Join(certs, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	serverPEM, err := os.ReadFile(filepath.Join(certs, "server.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serverPEM)
	operatorTLS := func() *tls.Config {
		return &tls.Config{ServerName: "cnpgi-plugin", RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	}
	dial := func(creds credentials.TransportCredentials) *grpc.ClientConn {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}

	conn := dial(credentials.NewTLS(operatorTLS()))
	types := handshake(t, ctx, conn)
	if !slices.Contains(types, identity.PluginCapability_Service_TYPE_OPERATOR_SERVICE) {
		t.Fatalf("capabilities over TLS %v", types)
	}
	// Without a sidecar image there is no injection to offer.
	for _, absent := range []identity.PluginCapability_Service_Type{identity.PluginCapability_Service_TYPE_LIFECYCLE_SERVICE,
		identity.PluginCapability_Service_TYPE_INSTANCE_SIDECAR_INJECTION, identity.PluginCapability_Service_TYPE_INSTANCE_JOB_SIDECAR_INJECTION} {
		if slices.Contains(types, absent) {
			t.Errorf("%v offered without PLINTH_CNPGI_SIDECAR_IMAGE", absent)
		}
	}
	res, err := operator.NewOperatorClient(conn).ValidateClusterCreate(ctx, &operator.OperatorValidateClusterCreateRequest{Definition: cluster("pg", map[string]string{"objectStore": "nope"})})
	if err != nil || len(res.GetValidationErrors()) != 1 {
		t.Fatalf("validation over TLS: %v, %v", res, err)
	}

	refused := func(name string, creds credentials.TransportCredentials) {
		t.Helper()
		_, err := identity.NewIdentityClient(dial(creds)).GetPluginMetadata(ctx, &identity.GetPluginMetadataRequest{})
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	noCert := operatorTLS()
	noCert.Certificates = nil
	refused("a client without a certificate", credentials.NewTLS(noCert))
	old := operatorTLS()
	old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	refused("TLS 1.2", credentials.NewTLS(old))
	refused("plaintext", insecure.NewCredentials())

	// The unix socket beside it stays as the instance manager dials it: plaintext.
	handshake(t, ctx, p.conn)
}
