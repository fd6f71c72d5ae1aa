package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
)

// revocations collects the token.revoked events auth publishes, as another service would.
type revocations struct {
	mu  sync.Mutex
	got []*eventsv1.TokenRevoked
}

func watchRevocations(t *testing.T, natsURL string) *revocations {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r := &revocations{}
	_, err = nc.Subscribe("plinth.auth.token.revoked", func(m *nats.Msg) {
		var ev eventsv1.TokenRevoked
		if proto.Unmarshal(m.Data, &ev) == nil {
			r.mu.Lock()
			r.got = append(r.got, &ev)
			r.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitFor polls until an event of userID with reason arrives (relayed from the outbox).
func (r *revocations) waitFor(t *testing.T, ctx context.Context, userID string, reason eventsv1.TokenRevocationReason) {
	t.Helper()
	for {
		r.mu.Lock()
		for _, ev := range r.got {
			if ev.GetUserId() == userID && ev.GetReason() == reason && len(ev.GetTokenId()) == 64 {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("no token.revoked event for user %s with reason %v", userID, reason)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func code(t *testing.T, err error, want codes.Code, field string) {
	t.Helper()
	if status.Code(err) != want || !strings.Contains(status.Convert(err).Message(), field) {
		t.Fatalf("want %v naming %q, got %v", want, field, err)
	}
}

func TestAdminAPIRefusesAllButAdmins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	auth, admin := authpb.NewAuthServiceClient(conn), adminpb.NewAdminServiceClient(conn)
	ctx := ctxT(t)
	rootTok := login(t, ctx, auth, "admin", "admin-secret-pw").GetToken()
	root := bearer(ctx, rootTok)

	_, err := admin.ListUsers(ctx, &adminpb.ListUsersRequest{})
	code(t, err, codes.Unauthenticated, authn.MsgNoToken)
	_, err = admin.ListUsers(bearer(ctx, "plt_not-a-token"), &adminpb.ListUsersRequest{})
	code(t, err, codes.Unauthenticated, authn.MsgInvalidToken)
	_, err = admin.CreateUser(bearer(ctx, strings.Repeat("x", 5000)), &adminpb.CreateUserRequest{Username: "mallory"})
	code(t, err, codes.Unauthenticated, authn.MsgInvalidToken)

	if _, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "bob", Password: "bob-password"}); err != nil {
		t.Fatal(err)
	}
	bob := bearer(ctx, login(t, ctx, auth, "bob", "bob-password").GetToken())
	calls := map[string]func() error{
		"ListUsers": func() error { _, err := admin.ListUsers(bob, &adminpb.ListUsersRequest{}); return err },
		"CreateUser": func() error {
			_, err := admin.CreateUser(bob, &adminpb.CreateUserRequest{Username: "bobs-friend", Password: "whatever1", Admin: true})
			return err
		},
		"SetUserDisabled": func() error {
			_, err := admin.SetUserDisabled(bob, &adminpb.SetUserDisabledRequest{Username: "admin", Disabled: true})
			return err
		},
		"ResetPassword": func() error {
			_, err := admin.ResetPassword(bob, &adminpb.ResetPasswordRequest{Username: "admin", Password: "whatever1"})
			return err
		},
		"RevokeUserTokens": func() error {
			_, err := admin.RevokeUserTokens(bob, &adminpb.RevokeUserTokensRequest{Username: "admin"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); status.Code(err) != codes.PermissionDenied {
			t.Errorf("%s by a non-admin: %v", name, err)
		}
	}
	// Nothing the refused calls asked for happened.
	if _, err := auth.Login(ctx, &authpb.LoginRequest{Username: "bobs-friend", Password: "whatever1"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a refused CreateUser created the user: %v", err)
	}
	if !checkToken(t, ctx, auth, rootTok) {
		t.Fatal("a refused call revoked the admin's token")
	}

	// An admin created through the API may use it.
	if _, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "carol", Password: "carol-pw", Admin: true}); err != nil {
		t.Fatal(err)
	}
	carol := bearer(ctx, login(t, ctx, auth, "carol", "carol-pw").GetToken())
	if _, err := admin.ListUsers(carol, &adminpb.ListUsersRequest{}); err != nil {
		t.Fatalf("an admin created through the API: %v", err)
	}
}

func TestAdminAPIManagesUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	revoked := watchRevocations(t, e.natsURL)
	conn := e.start(t, e.config(t))
	auth, admin := authpb.NewAuthServiceClient(conn), adminpb.NewAdminServiceClient(conn)
	ctx := ctxT(t)
	root := bearer(ctx, login(t, ctx, auth, "admin", "admin-secret-pw").GetToken())

	// Bad input names the field; a taken name (in any case) is AlreadyExists.
	_, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "a b", Password: "bob-password"})
	code(t, err, codes.InvalidArgument, "username")
	_, err = admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "bob", Password: "short"})
	code(t, err, codes.InvalidArgument, "password")
	_, err = admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "ADMIN", Password: "bob-password"})
	code(t, err, codes.AlreadyExists, "exists")

	// A generated password is returned once and works.
	created, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	pw := created.GetGeneratedPassword()
	if len(pw) < 20 || created.GetUser().GetUsername() != "Bob" || created.GetUser().GetAdmin() || created.GetUser().GetId() == "" {
		t.Fatalf("created %v", created)
	}
	bobTok := login(t, ctx, auth, "bob", pw).GetToken()

	// Disabling stops bob's token at once and publishes its revocation; bob cannot sign in.
	_, err = admin.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "nobody", Disabled: true})
	code(t, err, codes.NotFound, "not found")
	_, err = admin.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "", Disabled: true})
	code(t, err, codes.InvalidArgument, "username")
	_, err = admin.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "Admin", Disabled: true})
	code(t, err, codes.FailedPrecondition, "your own account")
	d, err := admin.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "bob", Disabled: true})
	if err != nil || !d.GetUser().GetDisabled() {
		t.Fatalf("disable: %v %v", d, err)
	}
	if checkToken(t, ctx, auth, bobTok) {
		t.Fatal("a disabled user's token still works")
	}
	revoked.waitFor(t, ctx, created.GetUser().GetId(), eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_USER_DISABLED)
	if _, err := auth.Login(ctx, &authpb.LoginRequest{Username: "bob", Password: pw}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a disabled user signed in: %v", err)
	}
	if _, err := admin.SetUserDisabled(root, &adminpb.SetUserDisabledRequest{Username: "bob"}); err != nil {
		t.Fatal(err)
	}
	bobTok = login(t, ctx, auth, "bob", pw).GetToken()

	// A reset password (given, then generated) revokes bob's tokens; only the new one works.
	_, err = admin.ResetPassword(root, &adminpb.ResetPasswordRequest{Username: "bob", Password: "x"})
	code(t, err, codes.InvalidArgument, "password")
	_, err = admin.ResetPassword(root, &adminpb.ResetPasswordRequest{Username: "nobody", Password: "bob-password"})
	code(t, err, codes.NotFound, "not found")
	if r, err := admin.ResetPassword(root, &adminpb.ResetPasswordRequest{Username: "bob", Password: "bob-password"}); err != nil || r.GetGeneratedPassword() != "" {
		t.Fatalf("reset: %v %v", r, err)
	}
	if checkToken(t, ctx, auth, bobTok) {
		t.Fatal("a password reset left the old token valid")
	}
	revoked.waitFor(t, ctx, created.GetUser().GetId(), eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_PASSWORD_CHANGED)
	if _, err := auth.Login(ctx, &authpb.LoginRequest{Username: "bob", Password: pw}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the old password still works: %v", err)
	}
	reset, err := admin.ResetPassword(root, &adminpb.ResetPasswordRequest{Username: "bob"})
	if err != nil || len(reset.GetGeneratedPassword()) < 20 {
		t.Fatalf("generated reset: %v %v", reset, err)
	}
	pw2 := reset.GetGeneratedPassword()
	bobTok = login(t, ctx, auth, "bob", pw2).GetToken()

	// Revoking tokens counts them and publishes each.
	_, err = admin.RevokeUserTokens(root, &adminpb.RevokeUserTokensRequest{Username: "nobody"})
	code(t, err, codes.NotFound, "not found")
	n, err := admin.RevokeUserTokens(root, &adminpb.RevokeUserTokensRequest{Username: "BOB"})
	if err != nil || n.GetRevokedTokens() != 1 {
		t.Fatalf("revoke: %v %v", n, err)
	}
	if checkToken(t, ctx, auth, bobTok) {
		t.Fatal("a revoked token still works")
	}
	revoked.waitFor(t, ctx, created.GetUser().GetId(), eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN)

	for _, secret := range []string{pw, pw2, bobTok} {
		if strings.Contains(e.logs.String(), secret) {
			t.Fatalf("a secret reached the log: %q", secret)
		}
	}
	if !strings.Contains(e.logs.String(), `"action":"reset_password"`) {
		t.Fatal("admin changes are not logged")
	}
}

func TestAdminAPIPagesUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	auth, admin := authpb.NewAuthServiceClient(conn), adminpb.NewAdminServiceClient(conn)
	ctx := ctxT(t)
	root := bearer(ctx, login(t, ctx, auth, "admin", "admin-secret-pw").GetToken())
	for _, name := range []string{"dave", "Carol", "erin", "bob"} {
		if _, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: name, Password: "another-pw"}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		resp, err := admin.ListUsers(root, &adminpb.ListUsersRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if pages > 3 || len(resp.GetUsers()) > 2 {
			t.Fatalf("page %d: %v", pages, resp)
		}
		for _, u := range resp.GetUsers() {
			names = append(names, u.GetUsername())
			if u.GetUsername() == "admin" && (!u.GetAdmin() || u.GetCreateTime() == nil) {
				t.Fatalf("admin listed as %v", u)
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if got := strings.Join(names, ","); got != "admin,bob,Carol,dave,erin" {
		t.Fatalf("users %s", got)
	}
	all, err := admin.ListUsers(root, &adminpb.ListUsersRequest{})
	if err != nil || len(all.GetUsers()) != 5 || all.GetNextPageToken() != "" {
		t.Fatalf("one default page: %v %v", all, err)
	}
	_, err = admin.ListUsers(root, &adminpb.ListUsersRequest{PageToken: "!!"})
	code(t, err, codes.InvalidArgument, "page_token")
	_, err = admin.ListUsers(root, &adminpb.ListUsersRequest{PageSize: -1})
	code(t, err, codes.InvalidArgument, "page_size")
}

// TestAdminAPIRoles: CreateUser's role (default from admin), SetUserRole's refusals, and a role
// change revoking the user's tokens (token.revoked events) so CheckToken names the new role at
// the next sign-in.
func TestAdminAPIRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	conn := e.start(t, e.config(t))
	revoked := watchRevocations(t, e.natsURL)
	auth, admin := authpb.NewAuthServiceClient(conn), adminpb.NewAdminServiceClient(conn)
	ctx := ctxT(t)
	root := bearer(ctx, login(t, ctx, auth, "admin", "admin-secret-pw").GetToken())

	for _, c := range []struct {
		req       *adminpb.CreateUserRequest
		role      string
		wantAdmin bool
	}{
		{&adminpb.CreateUserRequest{Username: "olga", Password: "olga-password"}, "operator", false},
		{&adminpb.CreateUserRequest{Username: "adam", Password: "adam-password", Admin: true}, "admin", true},
		{&adminpb.CreateUserRequest{Username: "vic", Password: "vic-password", Role: "Viewer"}, "viewer", false},
		{&adminpb.CreateUserRequest{Username: "ada", Password: "ada-password", Role: "admin"}, "admin", true},
	} {
		resp, err := admin.CreateUser(root, c.req)
		if err != nil || resp.GetUser().GetRole() != c.role || resp.GetUser().GetAdmin() != c.wantAdmin {
			t.Fatalf("CreateUser %v: %v %v", c.req, resp.GetUser(), err)
		}
	}
	_, err := admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "mixed", Password: "mixed-password", Admin: true, Role: "viewer"})
	code(t, err, codes.InvalidArgument, "role")
	_, err = admin.CreateUser(root, &adminpb.CreateUserRequest{Username: "rooty", Password: "rooty-password", Role: "root"})
	code(t, err, codes.InvalidArgument, "role: must be one of viewer, operator, admin")
	for _, name := range []string{"mixed", "rooty"} {
		if _, err := auth.Login(ctx, &authpb.LoginRequest{Username: name, Password: name + "-password"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("a refused CreateUser made %s: %v", name, err)
		}
	}

	_, err = admin.SetUserRole(root, &adminpb.SetUserRoleRequest{Username: "nobody", Role: "viewer"})
	code(t, err, codes.NotFound, "user")
	_, err = admin.SetUserRole(root, &adminpb.SetUserRoleRequest{Username: "olga", Role: "god"})
	code(t, err, codes.InvalidArgument, "role")
	_, err = admin.SetUserRole(root, &adminpb.SetUserRoleRequest{Username: "olga"})
	code(t, err, codes.InvalidArgument, "role")
	_, err = admin.SetUserRole(root, &adminpb.SetUserRoleRequest{Username: "ADMIN", Role: "operator"})
	code(t, err, codes.FailedPrecondition, "your own role")

	// The account CheckToken names, with its role, as response headers.
	whoIs := func(token string) metadataMD {
		t.Helper()
		var h metadataMD
		resp, err := auth.CheckToken(ctx, &authpb.CheckTokenRequest{Token: token}, grpc.Header(&h))
		if err != nil || !resp.GetSuccess() {
			t.Fatalf("CheckToken: %v %v", resp, err)
		}
		return h
	}
	olga := login(t, ctx, auth, "olga", "olga-password")
	h := whoIs(olga.GetToken())
	if got := h.Get(authn.RoleHeader); len(got) != 1 || got[0] != "operator" || h.Get(authn.NameHeader)[0] != "olga" || h.Get(authn.AccountHeader)[0] != olga.GetAccountId() {
		t.Fatalf("CheckToken headers: %v", h)
	}
	// And when the token expires, exactly as Login said (what a service binds to the session
	// must not outlive it).
	// (stored in microseconds).
	if got := h.Get(authn.ExpiresHeader); len(got) != 1 || got[0] != olga.GetExpires().GetTimestamp().AsTime().Truncate(time.Microsecond).UTC().Format(time.RFC3339Nano) {
		t.Fatalf("CheckToken's %s = %v, want Login's expiry %v", authn.ExpiresHeader, got, olga.GetExpires().GetTimestamp().AsTime())
	}
	if _, err := admin.ListUsers(bearer(ctx, olga.GetToken()), &adminpb.ListUsersRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an operator called the admin API: %v", err)
	}
	resp, err := admin.SetUserRole(root, &adminpb.SetUserRoleRequest{Username: "Olga", Role: "viewer"})
	if err != nil || resp.GetUser().GetRole() != "viewer" || resp.GetUser().GetUsername() != "olga" {
		t.Fatalf("SetUserRole: %v %v", resp, err)
	}
	if checkToken(t, ctx, auth, olga.GetToken()) {
		t.Fatal("a role change must revoke the user's tokens")
	}
	revoked.waitFor(t, ctx, olga.GetAccountId(), eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN)
	if got := whoIs(login(t, ctx, auth, "olga", "olga-password").GetToken()).Get(authn.RoleHeader); len(got) != 1 || got[0] != "viewer" {
		t.Fatalf("role after the change: %v", got)
	}

	// Another admin may demote the first one, who then loses the admin API at once.
	ada := bearer(ctx, login(t, ctx, auth, "ada", "ada-password").GetToken())
	if _, err := admin.SetUserRole(ada, &adminpb.SetUserRoleRequest{Username: "admin", Role: "operator"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ListUsers(root, &adminpb.ListUsersRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the demoted admin's token: %v", err)
	}
	list, err := admin.ListUsers(ada, &adminpb.ListUsersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, u := range list.GetUsers() {
		roles[u.GetUsername()] = u.GetRole()
	}
	want := map[string]string{"admin": "operator", "ada": "admin", "adam": "admin", "olga": "viewer", "vic": "viewer"}
	for name, role := range want {
		if roles[name] != role {
			t.Fatalf("ListUsers roles: %v, want %v", roles, want)
		}
	}
}
