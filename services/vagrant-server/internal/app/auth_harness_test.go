package app_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// plinthToken is the one Plinth token the test's auth accepts.
const plinthToken = "plt_vagrant-test-token-7d1e0b3c"

// checkAuth plays auth's CheckToken (services.auth.AuthService), the only call vagrant-server
// makes to it (for plinth.vagrant.v1 calls): plinthToken, an operator's expiring in an hour,
// and the tokens a test adds, answered with the account headers (and the expiry) as auth
// sends them. Cross-service flows with the real auth live in e2e/.
type checkAuth struct {
	authpb.UnimplementedAuthServiceServer
	mu     sync.Mutex
	tokens map[string]authn.Account
}

func (a *checkAuth) CheckToken(ctx context.Context, r *authpb.CheckTokenRequest) (*authpb.CheckTokenResponse, error) {
	a.mu.Lock()
	acct, ok := a.tokens[r.GetToken()]
	a.mu.Unlock()
	if !ok || (!acct.Expires.IsZero() && !time.Now().Before(acct.Expires)) {
		return &authpb.CheckTokenResponse{}, nil
	}
	_ = grpc.SetHeader(ctx, acct.TokenHeaders())
	return &authpb.CheckTokenResponse{Success: true}, nil
}

// addToken makes auth accept token as acct's (a zero Expires: auth names no expiry).
func (e *env) addToken(token string, acct authn.Account) {
	e.secret(token)
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	e.auth.tokens[token] = acct
}

// startAuth serves checkAuth on 127.0.0.1 until the test ends.
func (e *env) startAuth(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.auth, e.authAddr, e.authSrv = &checkAuth{tokens: map[string]authn.Account{}}, l.Addr().String(), grpc.NewServer()
	authpb.RegisterAuthServiceServer(e.authSrv, e.auth)
	go func() { _ = e.authSrv.Serve(l) }()
	t.Cleanup(e.authSrv.Stop)
	e.addToken(plinthToken, authn.Account{ID: "account-1", Name: "otto", Role: authz.Operator, Expires: time.Now().Add(time.Hour)})
}
