package app_test

import (
	"strings"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authv1 "github.com/plinth-dev/plinth/libs/api/api/services/auth/v1"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// TestKoorV1AuthService: Koor's released sign-in wire (api.services.auth.v1) is the seed's
// AuthService on the same accounts and tokens — a v1 token is a token, a v1 Logout revokes
// it for both wires — with the same refusals; through ext_authz (the gateway's rule) its Login
// and CheckToken are public, its Logout needs a token, and a v1 token carries its account's
// role: a viewer reads Koor's v1 stats but may not reach an operator's call.
func TestKoorV1AuthService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	ctx := ctxT(t)
	v1 := authv1.NewAuthServiceClient(conn)
	seed := authpb.NewAuthServiceClient(conn)

	resp, err := v1.Login(ctx, &authv1.LoginRequest{Username: "admin", Password: "admin-secret-pw"})
	if err != nil || !strings.HasPrefix(resp.GetToken(), identity.TokenPrefix) || resp.GetAccountId() == "" {
		t.Fatalf("v1 login: %v %v", resp, err)
	}
	if ttl := time.Until(resp.GetExpires().AsTime()); ttl < 25*time.Hour || ttl > 26*time.Hour {
		t.Fatalf("v1 token expires in %v, want the seed's 26h", ttl)
	}
	if !checkToken(t, ctx, seed, resp.GetToken()) {
		t.Fatal("the seed's CheckToken refuses a v1 token")
	}
	if ok, err := v1.CheckToken(ctx, &authv1.CheckTokenRequest{Token: resp.GetToken()}); err != nil || !ok.GetSuccess() {
		t.Fatalf("v1 CheckToken of a live token: %v %v", ok, err)
	}

	// The same refusals as the seed's Login, with its messages.
	for _, tc := range []struct {
		user, pw string
		code     codes.Code
	}{
		{"ab", "whatever", codes.InvalidArgument},
		{"admin", "12345", codes.InvalidArgument},
		{"admin", "wrong-password", codes.Unauthenticated},
		{"nobody", "wrong-password", codes.Unauthenticated},
	} {
		_, errV1 := v1.Login(ctx, &authv1.LoginRequest{Username: tc.user, Password: tc.pw})
		_, errSeed := seed.Login(ctx, &authpb.LoginRequest{Username: tc.user, Password: tc.pw})
		if status.Code(errV1) != tc.code || status.Convert(errV1).Message() != status.Convert(errSeed).Message() {
			t.Errorf("v1 Login(%q): %v; want %v as the seed's %v", tc.user, errV1, tc.code, errSeed)
		}
	}

	// Roles: a viewer and an operator sign in on the v1 wire.
	admin := adminpb.NewAdminServiceClient(conn)
	root := bearer(ctx, resp.GetToken())
	for _, u := range []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}} {
		if _, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: u.name, Password: u.name + "-password", Role: u.role}); err != nil {
			t.Fatal(err)
		}
	}
	v1Login := func(user string) string {
		r, err := v1.Login(ctx, &authv1.LoginRequest{Username: user, Password: user + "-password"})
		if err != nil {
			t.Fatalf("v1 login %s: %v", user, err)
		}
		return r.GetToken()
	}
	vera, otto := v1Login("vera"), v1Login("otto")
	z := authv3.NewAuthorizationClient(conn)
	check := func(path, token string) codes.Code {
		t.Helper()
		headers := map[string]string{}
		if token != "" {
			headers["authorization"] = "Bearer " + token
		}
		r, err := z.Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{Path: path, Method: "POST", Headers: headers}}}})
		if err != nil {
			t.Fatal(err)
		}
		return codes.Code(r.GetStatus().GetCode())
	}
	for _, c := range []struct {
		path, token string
		want        codes.Code
	}{
		// As Koor's UI sends them: under /api, Login without a token.
		{"/api/api.services.auth.v1.AuthService/Login", "", codes.OK},
		{"/api.services.auth.v1.AuthService/CheckToken", "", codes.OK},
		{"/api/api.services.auth.v1.AuthService/Logout", "", codes.Unauthenticated},
		{"/api/api.services.stats.v1.StatsService/GetClusterStats", "", codes.Unauthenticated},
		{"/api/api.services.stats.v1.StatsService/GetClusterStats", "plt_nope", codes.Unauthenticated},
		{"/api/api.services.stats.v1.StatsService/GetClusterStats", vera, codes.OK},
		{"/api/api.services.stats.v1.StatsService/ListClusterRecommendations", vera, codes.OK},
		{"/api/api.services.auth.v1.AuthService/Logout", vera, codes.OK},
		{"/cnct.kaas.api.Cluster/CreateCluster", vera, codes.PermissionDenied},
		{"/proto.LVService/CreateLV", vera, codes.PermissionDenied},
		{"/cnct.kaas.api.Cluster/CreateCluster", otto, codes.OK},
		{"/api/api.services.stats.v1.StatsService/GetClusterRadar", otto, codes.OK},
		{"/plinth.auth.v1.AdminService/ListUsers", otto, codes.PermissionDenied},
	} {
		if got := check(c.path, c.token); got != c.want {
			t.Errorf("ext_authz %s with token %.8q: %v, want %v", c.path, c.token, got, c.want)
		}
	}

	// A v1 Logout revokes the token for both wires; without a token it answers success=false
	// as the seed's does (the gateway refuses that call before it gets here).
	out, err := v1.Logout(bearer(ctx, vera), &authv1.LogoutRequest{})
	if err != nil || !out.GetSuccess() || out.RedirectTo != nil {
		t.Fatalf("v1 logout: %v %v", out, err)
	}
	if checkToken(t, ctx, seed, vera) {
		t.Fatal("the viewer's token is still valid after a v1 logout")
	}
	if check("/api/api.services.stats.v1.StatsService/GetClusterStats", vera) != codes.Unauthenticated {
		t.Fatal("ext_authz still accepts a token logged out on the v1 wire")
	}
	if out, err := v1.Logout(ctx, &authv1.LogoutRequest{}); err != nil || out.GetSuccess() {
		t.Fatalf("v1 logout without a token: %v %v", out, err)
	}
	if r := check("/api/api.services.stats.v1.StatsService/GetClusterStats", ""); r != codes.Unauthenticated {
		t.Fatalf("no token: %v", r)
	}
}
