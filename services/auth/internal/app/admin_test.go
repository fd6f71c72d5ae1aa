package app_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// users runs `auth users <args>` against the env's database with password on stdin.
func (e *env) users(t *testing.T, password string, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(password + "\n")
	w.Close()
	stdin := os.Stdin
	os.Stdin = r // the CLI reads passwords from stdin, like an operator's pipe
	defer func() { os.Stdin = stdin; r.Close() }()
	var out bytes.Buffer
	stdout := os.Stdout
	pr, pw, _ := os.Pipe()
	os.Stdout = pw
	environ := []string{"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_LOG_FORMAT=json", "PLINTH_AUTH_ARGON2_MEMORY_KIB=8192", "PLINTH_AUTH_ARGON2_ITERATIONS=1"}
	runErr := app.Main(context.Background(), append([]string{"users"}, args...), environ)
	pw.Close()
	os.Stdout = stdout
	out.ReadFrom(pr)
	return out.String(), runErr
}

func TestUserAdministrationRevokesTokens(t *testing.T) {
	e := newEnv(t) // not parallel: swaps os.Stdin/os.Stdout for the CLI
	conn := e.start(t, e.config(t))
	c := authpb.NewAuthServiceClient(conn)
	ctx := ctxT(t)
	if out, err := e.users(t, "bob-password-1", "add", "Bob"); err != nil || !strings.Contains(out, "created") {
		t.Fatalf("add: %q %v", out, err)
	}
	if _, err := e.users(t, "another-pw", "add", "bob"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate add: %v", err)
	}
	if _, err := e.users(t, "x", "add", "carol"); err == nil || !strings.Contains(err.Error(), "password") {
		t.Fatalf("short password: %v", err)
	}
	if _, err := e.users(t, "", "passwd", "nobody"); err == nil {
		t.Fatal("passwd of a missing user succeeded")
	}
	out, err := e.users(t, "", "list")
	if err != nil || !strings.Contains(out, "Bob") || !strings.Contains(out, "admin") || strings.Contains(out, "argon2") {
		t.Fatalf("list: %q %v", out, err)
	}

	tok := login(t, ctx, c, "bob", "bob-password-1").GetToken()
	if _, err := e.users(t, "bob-password-2", "passwd", "bob"); err != nil {
		t.Fatal(err)
	}
	if checkToken(t, ctx, c, tok) {
		t.Fatal("password change must revoke the user's tokens")
	}
	if _, err := c.Login(ctx, &authpb.LoginRequest{Username: "bob", Password: "bob-password-1"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("old password: %v", err)
	}
	tok = login(t, ctx, c, "bob", "bob-password-2").GetToken()
	if _, err := e.users(t, "", "disable", "bob"); err != nil {
		t.Fatal(err)
	}
	if checkToken(t, ctx, c, tok) {
		t.Fatal("disabling must revoke the user's tokens")
	}
	if _, err := c.Login(ctx, &authpb.LoginRequest{Username: "bob", Password: "bob-password-2"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("disabled user logged in: %v", err)
	}
	if _, err := e.users(t, "", "enable", "bob"); err != nil {
		t.Fatal(err)
	}
	tok = login(t, ctx, c, "bob", "bob-password-2").GetToken()
	if out, err := e.users(t, "", "revoke-tokens", "bob"); err != nil || !strings.Contains(out, "revoked 1 token") {
		t.Fatalf("revoke-tokens: %q %v", out, err)
	}
	if checkToken(t, ctx, c, tok) {
		t.Fatal("revoke-tokens left the token valid")
	}

	// grant-admin (set-role bob admin) opens the admin API to bob, revoking the tokens he
	// holds so no token carries a stale role; revoke-admin makes him an operator again.
	admin := adminpb.NewAdminServiceClient(conn)
	tok = login(t, ctx, c, "bob", "bob-password-2").GetToken()
	if _, err := admin.ListUsers(bearer(ctx, tok), &adminpb.ListUsersRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob before grant-admin: %v", err)
	}
	if out, err := e.users(t, "", "grant-admin", "bob"); err != nil || !strings.Contains(out, "is now admin") {
		t.Fatalf("grant-admin: %q %v", out, err)
	}
	if checkToken(t, ctx, c, tok) {
		t.Fatal("a role change must revoke the user's tokens")
	}
	tok = login(t, ctx, c, "bob", "bob-password-2").GetToken()
	if _, err := admin.ListUsers(bearer(ctx, tok), &adminpb.ListUsersRequest{}); err != nil {
		t.Fatalf("bob after grant-admin: %v", err)
	}
	if out, err := e.users(t, "", "list"); err != nil || !strings.Contains(out, "ROLE") || !regexp.MustCompile(`(?m)^Bob\s+\S+\s+enabled\s+admin\s`).MatchString(out) {
		t.Fatalf("list: %q %v", out, err)
	}
	if _, err := e.users(t, "", "revoke-admin", "bob"); err != nil {
		t.Fatal(err)
	}
	tok = login(t, ctx, c, "bob", "bob-password-2").GetToken()
	if _, err := admin.ListUsers(bearer(ctx, tok), &adminpb.ListUsersRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob after revoke-admin: %v", err)
	}

	// create --role and set-role: a viewer, then an operator; bad roles are refused naming
	// the roles and change nothing; the last admin keeps the role.
	if out, err := e.users(t, "dora-password", "create", "dora", "--role", "viewer"); err != nil || !strings.Contains(out, "role viewer") {
		t.Fatalf("create --role viewer: %q %v", out, err)
	}
	if _, err := e.users(t, "eve-password", "create", "eve", "--role=root"); err == nil || !strings.Contains(err.Error(), "viewer, operator, admin") {
		t.Fatalf("create --role=root: %v", err)
	}
	if _, err := c.Login(ctx, &authpb.LoginRequest{Username: "eve", Password: "eve-password"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a refused create made the user: %v", err)
	}
	if out, err := e.users(t, "", "list"); err != nil || !regexp.MustCompile(`(?m)^dora\s+\S+\s+enabled\s+viewer\s`).MatchString(out) {
		t.Fatalf("list after create --role viewer: %q %v", out, err)
	}
	dora := login(t, ctx, c, "dora", "dora-password").GetToken()
	if _, err := e.users(t, "", "set-role", "dora", "superuser"); err == nil || !strings.Contains(err.Error(), "role") {
		t.Fatalf("set-role superuser: %v", err)
	}
	if !checkToken(t, ctx, c, dora) {
		t.Fatal("a refused set-role revoked the tokens")
	}
	if out, err := e.users(t, "", "set-role", "dora", "operator"); err != nil || !strings.Contains(out, "now operator") {
		t.Fatalf("set-role operator: %q %v", out, err)
	}
	if checkToken(t, ctx, c, dora) {
		t.Fatal("set-role must revoke the user's tokens")
	}
	if _, err := e.users(t, "", "set-role", "admin", "viewer"); err == nil || !strings.Contains(err.Error(), "last enabled admin") {
		t.Fatalf("demoting the last admin from the CLI: %v", err)
	}
	for _, secret := range []string{"bob-password-1", "bob-password-2", tok, "$argon2id$"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Fatalf("a secret reached the log: %q", secret)
		}
	}
}

func TestExtAuthzGuardsTheGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	ctx := ctxT(t)
	token := login(t, ctx, authpb.NewAuthServiceClient(conn), "admin", "admin-secret-pw").GetToken()
	z := authv3.NewAuthorizationClient(conn)
	check := func(path, authorization string) *authv3.CheckResponse {
		t.Helper()
		headers := map[string]string{}
		if authorization != "" {
			headers["authorization"] = authorization
		}
		resp, err := z.Check(ctx, &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{Path: path, Method: "POST", Headers: headers}}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := check("/stats.StatsService/GetClusterStats", ""); r.GetStatus().GetCode() != int32(codes.Unauthenticated) ||
		r.GetDeniedResponse().GetStatus().GetCode() != 401 || r.GetDeniedResponse().GetBody() != authn.MsgNoToken {
		t.Fatalf("no token: %v", r)
	}
	if r := check("/stats.StatsService/GetClusterStats", "Bearer plt_nope"); r.GetDeniedResponse().GetBody() != authn.MsgInvalidToken {
		t.Fatalf("bad token: %v", r)
	}
	r := check("/stats.StatsService/GetClusterStats", "Bearer "+token)
	if r.GetStatus().GetCode() != 0 || r.GetOkResponse() == nil {
		t.Fatalf("live token: %v", r)
	}
	forwarded := map[string]string{}
	for _, h := range r.GetOkResponse().GetHeaders() {
		if h.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
			t.Fatalf("%s must replace a client's copy: %v", h.GetHeader().GetKey(), h)
		}
		forwarded[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
	}
	if len(forwarded) != 3 || forwarded[authn.AccountHeader] == "" || forwarded[authn.NameHeader] != "admin" || forwarded[authn.RoleHeader] != "admin" {
		t.Fatalf("the account (id, name, role) must be forwarded: %v", forwarded)
	}

	// Roles: a viewer reads but may not write or administer users (403 PermissionDenied with
	// authz's message, as the gateway and the services answer); an operator writes but may not
	// administer users.
	admin := adminpb.NewAdminServiceClient(conn)
	root := bearer(ctx, token)
	for _, u := range []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}} {
		if _, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: u.name, Password: u.name + "-password", Role: u.role}); err != nil {
			t.Fatal(err)
		}
	}
	vera := "Bearer " + login(t, ctx, authpb.NewAuthServiceClient(conn), "vera", "vera-password").GetToken()
	otto := "Bearer " + login(t, ctx, authpb.NewAuthServiceClient(conn), "otto", "otto-password").GetToken()
	for _, c := range []struct {
		auth, path string
		ok         bool
	}{
		{vera, "/stats.StatsService/GetClusterStats", true},
		{vera, "/cnct.kaas.api.Cluster/GetClusterList?x=1", true},
		{vera, "/cnct.kaas.api.Cluster/CreateCluster", false},
		{vera, "/proto.LVService/CreateLV", false},
		{vera, "/plinth.auth.v1.AdminService/ListUsers", false},
		{otto, "/cnct.kaas.api.Cluster/CreateCluster", true},
		{otto, "/proto.LVService/CreateLV", true},
		{otto, "/plinth.auth.v1.AdminService/ListUsers", false},
	} {
		r := check(c.path, c.auth)
		if c.ok {
			if r.GetStatus().GetCode() != 0 || r.GetOkResponse() == nil {
				t.Fatalf("%s %s: %v", c.auth[:12], c.path, r)
			}
			continue
		}
		d := r.GetDeniedResponse()
		if r.GetStatus().GetCode() != int32(codes.PermissionDenied) || d.GetStatus().GetCode() != 403 ||
			!strings.Contains(d.GetBody(), "may not call "+c.path) {
			t.Fatalf("%s must be refused with 403 PermissionDenied: %v", c.path, r)
		}
		var grpcStatus string
		for _, h := range d.GetHeaders() {
			if h.GetHeader().GetKey() == "grpc-status" {
				grpcStatus = h.GetHeader().GetValue()
			}
		}
		if grpcStatus != "7" {
			t.Fatalf("grpc-status %q, want 7 (PermissionDenied)", grpcStatus)
		}
	}
	for _, public := range []string{"/services.auth.AuthService/Login", "/grpc.health.v1.Health/Check"} {
		if r := check(public, ""); r.GetStatus().GetCode() != 0 {
			t.Fatalf("%s must be public: %v", public, r)
		}
	}
}
