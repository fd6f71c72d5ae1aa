package app_test

import (
	"testing"

	"google.golang.org/grpc/metadata"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authz"
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
		Services: []string{"services.auth.AuthService", "api.services.auth.v1.AuthService", "envoy.service.auth.v3.Authorization"},
		Metadata: metadata.Pairs("authorization", "Bearer "+token),
	})
}

// TestHostileRoles: auth's AdminService itself (not only the gateway) refuses a viewer and an
// operator every call, with PermissionDenied naming the method, and answers an admin.
func TestHostileRoles(t *testing.T) {
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	ctx := ctxT(t)
	auth := authpb.NewAuthServiceClient(conn)
	root := bearer(ctx, login(t, ctx, auth, "admin", "admin-secret-pw").GetToken())
	for _, role := range []authz.Role{authz.Viewer, authz.Operator, authz.Admin} {
		name, pw := "hostile-"+string(role), string(role)+"-password"
		if _, err := adminpb.NewAdminServiceClient(conn).CreateUser(root, &adminpb.CreateUserRequest{Username: name, Password: pw, Role: string(role)}); err != nil {
			t.Fatal(err)
		}
		token := login(t, ctx, auth, name, pw).GetToken()
		t.Run(string(role), func(t *testing.T) {
			hostiletest.RunRole(t, hostiletest.Target{Conn: conn, Services: []string{"plinth.auth.v1.AdminService"},
				Metadata: metadata.Pairs("authorization", "Bearer "+token)}, role)
		})
	}
}
