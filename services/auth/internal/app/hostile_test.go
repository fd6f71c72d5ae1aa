package app_test

import (
	"testing"

	"google.golang.org/grpc/metadata"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestHostileClient probes every auth RPC (and ext_authz) with huge and NUL strings, unknown
// fields, garbage and oversized metadata: each is refused with a documented code and a short
// message, and auth keeps answering. The probes carry a real token, so they reach the handlers.
func TestHostileClient(t *testing.T) {
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	token := login(t, ctxT(t), authpb.NewAuthServiceClient(conn), "admin", "admin-secret-pw").GetToken()
	hostiletest.Run(t, hostiletest.Target{
		Conn:     conn,
		Services: []string{"services.auth.AuthService", "envoy.service.auth.v3.Authorization"},
		Metadata: metadata.Pairs("authorization", "Bearer "+token),
	})
}
