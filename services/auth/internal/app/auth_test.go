package app_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

func TestLoginCheckLogoutRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := authpb.NewAuthServiceClient(e.start(t, e.config(t)))
	ctx := ctxT(t)

	resp := login(t, ctx, c, "admin", "admin-secret-pw")
	if !strings.HasPrefix(resp.GetToken(), identity.TokenPrefix) || resp.GetAccountId() == "" {
		t.Fatalf("login response %v", resp)
	}
	if ttl := time.Until(resp.GetExpires().GetTimestamp().AsTime()); ttl < 25*time.Hour || ttl > 26*time.Hour {
		t.Fatalf("token expires in %v, want upstream's 26h", ttl)
	}
	if !checkToken(t, ctx, c, resp.GetToken()) {
		t.Fatal("fresh token rejected")
	}
	if again := login(t, ctx, c, "ADMIN", "admin-secret-pw"); again.GetToken() == resp.GetToken() {
		t.Fatal("two logins must get two tokens")
	}
	out, err := c.Logout(bearer(ctx, resp.GetToken()), &authpb.LogoutRequest{})
	if err != nil || !out.GetSuccess() {
		t.Fatalf("logout: %v %v", out, err)
	}
	if checkToken(t, ctx, c, resp.GetToken()) {
		t.Fatal("token still valid after logout")
	}
	if out, err := c.Logout(bearer(ctx, resp.GetToken()), &authpb.LogoutRequest{}); err != nil || !out.GetSuccess() {
		t.Fatalf("logout must be idempotent: %v %v", out, err)
	}
	if out, err := c.Logout(ctx, &authpb.LogoutRequest{}); err != nil || out.GetSuccess() {
		t.Fatalf("logout without a token must answer success=false: %v %v", out, err)
	}
	for _, bad := range []string{"", "garbage", identity.TokenPrefix + strings.Repeat("A", 43)} {
		if checkToken(t, ctx, c, bad) {
			t.Fatalf("CheckToken(%q) = true", bad)
		}
	}
}

func TestLoginRejectsBadInputWithoutEnumeratingUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := authpb.NewAuthServiceClient(e.start(t, e.config(t)))
	ctx := ctxT(t)
	cases := []struct {
		user, pw string
		code     codes.Code
		field    string
	}{
		{"ab", "whatever", codes.InvalidArgument, "username"},
		{"bad name!", "whatever", codes.InvalidArgument, "username"},
		{"admin", "12345", codes.InvalidArgument, "password"},
		{"admin", strings.Repeat("x", 71), codes.InvalidArgument, "password"},
		{"admin", "wrong-password", codes.Unauthenticated, ""},
		{"nobody", "wrong-password", codes.Unauthenticated, ""},
	}
	var unauthMsgs []string
	for _, tc := range cases {
		_, err := c.Login(ctx, &authpb.LoginRequest{Username: tc.user, Password: tc.pw})
		st := status.Convert(err)
		if st.Code() != tc.code || !strings.HasPrefix(st.Message(), tc.field) {
			t.Errorf("Login(%q): %v, want %v naming %q", tc.user, err, tc.code, tc.field)
		}
		if st.Code() == codes.Unauthenticated {
			unauthMsgs = append(unauthMsgs, st.Message())
		}
	}
	if len(unauthMsgs) != 2 || unauthMsgs[0] != unauthMsgs[1] {
		t.Fatalf("unknown user and wrong password must read the same: %q", unauthMsgs)
	}
}

func TestFirstStartCreatesAdminAndPrintsGeneratedPasswordOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noPassword := e.config(t)
	noPassword.AdminPassword = ""
	e.start(t, noPassword)
	out := e.stdout.String()
	_, after, found := strings.Cut(out, "admin / ")
	if !found {
		t.Fatalf("no generated password on stdout: %q", out)
	}
	pw := strings.Fields(after)[0]
	c := authpb.NewAuthServiceClient(e.start(t, noPassword)) // a second start creates nothing
	login(t, ctxT(t), c, "admin", pw)
	if strings.Count(e.stdout.String(), "admin / ") != 1 {
		t.Fatal("the generated password must be printed exactly once")
	}
	if strings.Contains(e.logs.String(), pw) {
		t.Fatal("the generated password reached the log")
	}
}
