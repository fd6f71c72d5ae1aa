package app_test

import (
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// TestRolesAreEnforcedByKaasItself: kaas's own interceptor (not only the gateway) refuses a
// viewer's writes with PermissionDenied and lets its reads through, and an operator's token
// may call everything kaas serves (defence in depth, as for tokens).
func TestRolesAreEnforcedByKaasItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	k := e.start(t, e.config(t))
	conn := grpcConn(t, k.GRPCAddr())

	for _, role := range []authz.Role{authz.Viewer, authz.Operator} {
		token := newUserToken(t, e, role)
		t.Run(string(role), func(t *testing.T) {
			hostiletest.RunRole(t, hostiletest.Target{Conn: conn, Services: []string{"cnct.kaas.api.Cluster", "plinth.kaas.v1.ClusterInfoService"},
				Metadata: metadata.Pairs("authorization", "Bearer "+token)}, role)
		})
	}
}
