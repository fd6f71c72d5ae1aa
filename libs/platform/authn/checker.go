package authn

import (
	"context"
	"time"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
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

// CheckToken implements Checker. The account id comes from auth's response header.
func (g *GRPCChecker) CheckToken(ctx context.Context, token string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	// A fresh outgoing context: the caller's incoming metadata must not be forwarded.
	ctx = metadata.NewOutgoingContext(ctx, metadata.MD{})
	var header metadata.MD
	resp, err := g.client.CheckToken(ctx, &authpb.CheckTokenRequest{Token: token}, grpc.Header(&header))
	if err != nil {
		return "", false, err
	}
	if !resp.GetSuccess() {
		return "", false, nil
	}
	var account string
	if v := header.Get(AccountHeader); len(v) > 0 {
		account = v[0]
	}
	return account, true, nil
}
