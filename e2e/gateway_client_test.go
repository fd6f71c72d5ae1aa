package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// callTimeout bounds one call of a journey.
const callTimeout = 30 * time.Second

// withToken is a context whose calls carry `authorization: Bearer token` ("" carries none).
func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// callCtx is a context for one call of a test.
func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// login logs in as the first admin through the gateway and returns the token.
func (s *journeySuite) login(t *testing.T) string {
	t.Helper()
	resp, err := authpb.NewAuthServiceClient(s.gw).Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password})
	if err != nil {
		t.Fatalf("Login through the gateway as admin: %v", err)
	}
	if !strings.HasPrefix(resp.GetToken(), "plt_") || resp.GetAccountId() == "" {
		t.Fatalf("Login answered token %q for account %q, want a plt_ token and an account", resp.GetToken(), resp.GetAccountId())
	}
	s.accountID = resp.GetAccountId()
	return resp.GetToken()
}

// probe is one call to a backend through a connection; it returns the call's error.
type probe struct {
	name    string
	backend string
	call    func(ctx context.Context, conn grpc.ClientConnInterface) error
}

// wantCode fails unless err has code want.
func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: %v (code %s), want %s", what, err, got, want)
	}
}

// succeeds calls p with the token until it succeeds: a backend whose view is not built yet
// (stats before its first collection) answers Unavailable for a moment after start.
func succeeds(t *testing.T, conn grpc.ClientConnInterface, p probe, token string) {
	t.Helper()
	err := eventually(30*time.Second, 100*time.Millisecond, func() error {
		err := p.call(withToken(callCtx(t), token), conn)
		if status.Code(err) == codes.Unavailable {
			return err
		}
		if err != nil {
			return retryStop{err}
		}
		return nil
	})
	if r, ok := err.(retryStop); ok {
		err = r.err
	}
	if err != nil {
		t.Errorf("%s with a token: %v", p.name, err)
	}
}

// retryStop ends eventually's retries early: this error will not go away.
type retryStop struct{ err error }

func (r retryStop) Error() string { return r.err.Error() }

// vagrantToken is a vagrant-server login token of the suite: the launcher bootstrapped the
// server and kept the runner's token in HOME/vagrant-runner/token.
func (s *journeySuite) vagrantToken(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.home, "vagrant-runner", "token"))
	if err != nil {
		t.Fatalf("the launcher kept no vagrant-server token for its runner: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// vagrantCtx carries what a Vagrant client sends: the API protocol range and, when given, its
// own (raw) login token.
func vagrantCtx(ctx context.Context, token string) context.Context {
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// describeServices lists the running services, for messages.
func (s *journeySuite) describeServices() string {
	var names []string
	for _, e := range s.endpoints.Services {
		names = append(names, e.Name)
	}
	return fmt.Sprint(names)
}

// dialPlain connects to a service directly (not through the gateway), without TLS.
func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
