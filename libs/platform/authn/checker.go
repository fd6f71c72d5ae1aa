package authn

import (
	"context"
	"time"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// GRPCChecker asks the auth service over gRPC (services.auth.AuthService/CheckToken).
type GRPCChecker struct {
	client  authpb.AuthServiceClient
	timeout time.Duration
}

// NewGRPCChecker checks tokens through conn, each call bounded by timeout (default 2 s).
func NewGRPCChecker(conn grpc.ClientConnInterface, timeout time.Duration) *GRPCChecker {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &GRPCChecker{client: authpb.NewAuthServiceClient(conn), timeout: timeout}
}

// CheckToken implements Checker. The account comes from auth's response headers; a missing or
// unknown role leaves the account without one, which authz.Check refuses everything (an older
// auth, or a header mangled on the way, fails closed).
func (g *GRPCChecker) CheckToken(ctx context.Context, token string) (Account, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	// A fresh outgoing context: the caller's incoming metadata must not be forwarded.
	ctx = metadata.NewOutgoingContext(ctx, metadata.MD{})
	var header metadata.MD
	resp, err := g.client.CheckToken(ctx, &authpb.CheckTokenRequest{Token: token}, grpc.Header(&header))
	if err != nil {
		return Account{}, false, err
	}
	if !resp.GetSuccess() {
		return Account{}, false, nil
	}
	return AccountFromHeaders(header), true, nil
}

// AccountFromHeaders reads the account auth named in CheckToken's response headers. The role
// is one authz knows, or empty (no rights).
func AccountFromHeaders(md metadata.MD) Account {
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	a := Account{ID: first(AccountHeader), Name: first(NameHeader)}
	if r, err := authz.ParseRole(first(RoleHeader)); err == nil {
		a.Role = r
	}
	if t, err := time.Parse(time.RFC3339Nano, first(ExpiresHeader)); err == nil {
		a.Expires = t
	}
	return a
}

// Headers are the account as metadata pairs (id, name, role), as the gateway forwards them;
// CheckToken adds ExpiresHeader (TokenHeaders).
func (a Account) Headers() metadata.MD {
	return metadata.Pairs(AccountHeader, a.ID, NameHeader, a.Name, RoleHeader, string(a.Role))
}

// TokenHeaders are what CheckToken answers for a live token: the account's Headers and, when
// known, the token's expiry (ExpiresHeader).
func (a Account) TokenHeaders() metadata.MD {
	md := a.Headers()
	if !a.Expires.IsZero() {
		md.Set(ExpiresHeader, a.Expires.UTC().Format(time.RFC3339Nano))
	}
	return md
}
