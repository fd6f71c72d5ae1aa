package app_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// plinthToken is the one Plinth token the test's auth accepts.
const plinthToken = "plt_vagrant-test-token-7d1e0b3c"

// checkAuth plays auth's CheckToken (services.auth.AuthService), the only call vagrant-server
// makes to it (for plinth.vagrant.v1 calls): one valid token, an operator's, answered with the
// account headers as auth sends them. Cross-service flows with the real auth live in e2e/.
type checkAuth struct {
	authpb.UnimplementedAuthServiceServer
}

func (a *checkAuth) CheckToken(ctx context.Context, r *authpb.CheckTokenRequest) (*authpb.CheckTokenResponse, error) {
	if r.GetToken() != plinthToken {
		return &authpb.CheckTokenResponse{}, nil
	}
	_ = grpc.SetHeader(ctx, authn.Account{ID: "account-1", Name: "otto", Role: authz.Operator}.Headers())
	return &authpb.CheckTokenResponse{Success: true}, nil
}

// startAuth serves checkAuth on 127.0.0.1 until the test ends.
func (e *env) startAuth(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.auth, e.authAddr, e.authSrv = &checkAuth{}, l.Addr().String(), grpc.NewServer()
	authpb.RegisterAuthServiceServer(e.authSrv, e.auth)
	go func() { _ = e.authSrv.Serve(l) }()
	t.Cleanup(e.authSrv.Stop)
	e.secret(plinthToken)
}
