package app_test

import (
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
	"github.com/plinth-dev/plinth/services/auth/internal/oidctest"
)

// TestOIDCSignIn: the whole flow against a real provider over HTTP — begin, the provider's
// login page, its redirect with code and state, complete — issues a Plinth token that
// CheckToken accepts with the role the groups map to, and Logout revokes like any other. The
// user row is the provider's (provider, subject): signing in again is the same account.
func TestOIDCSignIn(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	oidc, auth := adminpb.NewOIDCServiceClient(conn), authpb.NewAuthServiceClient(conn)

	list, err := oidc.ListProviders(ctx, &adminpb.ListProvidersRequest{})
	if err != nil || len(list.GetProviders()) != 1 || list.GetProviders()[0].GetName() != "testop" ||
		list.GetProviders()[0].GetLabel() != "Test OP" || !list.GetPasswordLogin() {
		t.Fatalf("ListProviders: %v %v", list, err)
	}

	b := begin(t, ctx, oidc, callbackURL)
	for _, want := range []string{"code_challenge_method=S256", "code_challenge=", "nonce=", "state=" + b.GetState(), "client_id=plinth", "scope=openid"} {
		if !strings.Contains(b.GetAuthorizationUrl(), want) {
			t.Errorf("authorization URL %s lacks %s", b.GetAuthorizationUrl(), want)
		}
	}
	if strings.Contains(b.GetAuthorizationUrl(), clientSecret) {
		t.Error("the authorization URL carries the client secret")
	}
	cb := newBrowser(t).signInAt(b.GetAuthorizationUrl(), "alice", "alice-op-password")
	done, err := oidc.CompleteSignIn(ctx, callbackOf(cb))
	if err != nil {
		t.Fatalf("CompleteSignIn: %v", err)
	}
	if done.GetRole() != "admin" || done.GetUsername() != "alice" || done.GetProvider() != "testop" || !strings.HasPrefix(done.GetToken(), "plt_") ||
		time.Until(done.GetExpireTime().AsTime()) < 25*time.Hour {
		t.Fatalf("CompleteSignIn = %+v", done)
	}
	if !checkToken(t, ctx, auth, done.GetToken()) {
		t.Fatal("CheckToken refuses the token of an OpenID sign-in")
	}
	// As an admin's token, it administers users.
	users, err := adminpb.NewAdminServiceClient(conn).ListUsers(bearer(ctx, done.GetToken()), &adminpb.ListUsersRequest{})
	if err != nil || len(users.GetUsers()) != 2 {
		t.Fatalf("ListUsers with the OpenID admin's token: %v %v", users, err)
	}

	again, err := signIn(t, ctx, oidc, "alice", "alice-op-password")
	if err != nil || again.GetAccountId() != done.GetAccountId() {
		t.Fatalf("second sign-in: %v %v, want account %s again", again, err, done.GetAccountId())
	}
	if n, _ := e.oidcCounts(t); n != 1 {
		t.Fatalf("%d users of providers after two sign-ins of one person, want 1", n)
	}
	if _, err := auth.Logout(bearer(ctx, done.GetToken()), &authpb.LogoutRequest{}); err != nil {
		t.Fatal(err)
	}
	if checkToken(t, ctx, auth, done.GetToken()) || !checkToken(t, ctx, auth, again.GetToken()) {
		t.Fatal("Logout of one OpenID session: want it revoked and the other live")
	}
	// The user has no password: password login as alice is the one refusal of a bad login.
	if _, err := auth.Login(ctx, &authpb.LoginRequest{Username: "alice", Password: "alice-op-password"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("password login of an OpenID user: %v, want Unauthenticated", err)
	}
	e.assertNoOIDCSecrets(t, cb.Query().Get("code"), cb.Query().Get("state"), done.GetToken())
}

// TestOIDCNeverMatchesALocalUserByName: the provider's "bob" is not the local bob — another
// account, with another username, and neither can act as the other.
func TestOIDCNeverMatchesALocalUserByName(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	auth := authpb.NewAuthServiceClient(conn)
	adminTok := login(t, ctx, auth, "admin", "admin-secret-pw").GetToken()
	local, err := adminpb.NewAdminServiceClient(conn).CreateUser(bearer(ctx, adminTok), &adminpb.CreateUserRequest{Username: "bob", Password: "bob-password", Role: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := signIn(t, ctx, adminpb.NewOIDCServiceClient(conn), "bob", "bob-op-password")
	if err != nil {
		t.Fatal(err)
	}
	if done.GetAccountId() == local.GetUser().GetId() || done.GetUsername() == "bob" || !strings.HasPrefix(done.GetUsername(), "bob-") || done.GetRole() != "viewer" {
		t.Fatalf("the provider's bob signed in as %+v; the local bob is %s", done, local.GetUser().GetId())
	}
	if lr := login(t, ctx, auth, "bob", "bob-password"); lr.GetAccountId() != local.GetUser().GetId() {
		t.Fatalf("the local bob now logs into account %s", lr.GetAccountId())
	}
}

// TestOIDCRoleFollowsTheProvider: the role is the groups' at every sign-in; a change revokes
// the user's older tokens (as an admin's role change does), so no cache keeps the old role.
// Someone no group maps is refused, unless the provider has a default role.
func TestOIDCRoleFollowsTheProvider(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	oidc, auth := adminpb.NewOIDCServiceClient(conn), authpb.NewAuthServiceClient(conn)
	first, err := signIn(t, ctx, oidc, "olga", "olga-op-password")
	if err != nil || first.GetRole() != "operator" {
		t.Fatalf("olga: %v %v, want operator", first, err)
	}
	op.SetGroups("olga", "staff")
	second, err := signIn(t, ctx, oidc, "olga", "olga-op-password")
	if err != nil || second.GetRole() != "viewer" || second.GetAccountId() != first.GetAccountId() {
		t.Fatalf("olga after leaving ops: %v %v, want viewer on the same account", second, err)
	}
	if checkToken(t, ctx, auth, first.GetToken()) || !checkToken(t, ctx, auth, second.GetToken()) {
		t.Fatal("after the role change the operator's token must be revoked, the viewer's live")
	}

	users, tokens := e.oidcCounts(t)
	_, err = signIn(t, ctx, oidc, "nobody", "nobody-op-password")
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), `"groups" claim maps to a Plinth role`) {
		t.Fatalf("a person no group maps: %v, want PermissionDenied naming the claim", err)
	}
	if u, tk := e.oidcCounts(t); u != users || tk != tokens {
		t.Fatalf("a refused sign-in created %d users and %d tokens", u-users, tk-tokens)
	}

	// With a default role the same person signs in with it.
	e2 := newEnv(t)
	conn2 := e2.start(t, e2.config(t, withProvider(t, op, map[string]any{"default_role": "viewer"})))
	done, err := signIn(t, ctx, adminpb.NewOIDCServiceClient(conn2), "nobody", "nobody-op-password")
	if err != nil || done.GetRole() != "viewer" {
		t.Fatalf("with default_role viewer: %v %v", done, err)
	}
}

// TestOIDCKeyRotation: the provider rotates its signing key (and retires the old one); the
// next sign-in's ID token names a key auth has not seen, which it fetches from the JWKS.
func TestOIDCKeyRotation(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil)))
	ctx := ctxT(t)
	oidc := adminpb.NewOIDCServiceClient(conn)
	if _, err := signIn(t, ctx, oidc, "alice", "alice-op-password"); err != nil {
		t.Fatal(err)
	}
	old := op.KeyID()
	if _, err := op.Rotate(true); err != nil {
		t.Fatal(err)
	}
	kids := make(chan string, 1)
	op.Tamper(func(tok string) string { kids <- headerKid(tok); return tok })
	done, err := signIn(t, ctx, oidc, "alice", "alice-op-password")
	if err != nil {
		t.Fatalf("sign-in after the provider rotated its key: %v", err)
	}
	if kid := <-kids; kid == old || kid != op.KeyID() {
		t.Fatalf("the second ID token was signed by %q; old %q, new %q", kid, old, op.KeyID())
	}
	if !checkToken(t, ctx, authpb.NewAuthServiceClient(conn), done.GetToken()) {
		t.Fatal("token after rotation refused")
	}
}

// TestPasswordLoginOff: with PLINTH_AUTH_PASSWORD_LOGIN=false a right password is refused
// with FailedPrecondition naming the setting, ListProviders says so, and the provider works.
func TestPasswordLoginOff(t *testing.T) {
	e := newEnv(t)
	op := startOP(t)
	conn := e.start(t, e.config(t, withProvider(t, op, nil), func(c *app.Config) { c.PasswordLogin = false }))
	ctx := ctxT(t)
	_, err := authpb.NewAuthServiceClient(conn).Login(ctx, &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "PLINTH_AUTH_PASSWORD_LOGIN") {
		t.Fatalf("password login while off: %v", err)
	}
	oidc := adminpb.NewOIDCServiceClient(conn)
	if l, err := oidc.ListProviders(ctx, &adminpb.ListProvidersRequest{}); err != nil || l.GetPasswordLogin() {
		t.Fatalf("ListProviders: %v %v, want password_login false", l, err)
	}
	if _, err := signIn(t, ctx, oidc, "alice", "alice-op-password"); err != nil {
		t.Fatal(err)
	}
	// Turning password login off without a provider would lock everyone out: refused at start.
	cfg := e.config(t)
	cfg.PasswordLogin = false
	if err := cfg.ValidateServe(); err == nil || !strings.Contains(err.Error(), "PLINTH_AUTH_OIDC_PROVIDERS_FILE") {
		t.Fatalf("password login off without providers: %v", err)
	}
}

// headerKid is the kid of a compact JWS's header.
func headerKid(jwt string) string {
	c := oidctest.ClaimsOf(strings.Join([]string{"", strings.Split(jwt, ".")[0], ""}, "."))
	kid, _ := c["kid"].(string)
	return kid
}

// foreignKey is a key the provider never published.
func foreignKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
