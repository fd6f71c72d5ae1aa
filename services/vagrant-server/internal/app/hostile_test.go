package app_test

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestHostileClient probes every Vagrant RPC with huge and NUL strings in each string field,
// unknown fields, garbage and oversized metadata and streams cut half way: each is answered
// with a documented code (never Internal) and a short message, and the server keeps
// answering. The probes carry the protocol header and a login token, so they reach the
// handlers; a runner is registered, so job streams get past their first checks.
func TestHostileClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, _ := e.serve(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := vagrant.NewVagrantClient(conn)
	token := e.bootstrap(t, c)
	startRunner(t, c, token, "hostile-runner", false)
	hostiletest.Run(t, hostiletest.Target{
		Conn:     conn,
		Services: []string{vagrant.Vagrant_ServiceDesc.ServiceName},
		Metadata: metadata.Pairs("client-api-protocol", "1,1", "authorization", token),
	})
}
