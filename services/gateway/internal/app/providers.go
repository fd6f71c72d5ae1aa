package app

import (
	"context"

	"google.golang.org/grpc"

	authpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/services/gateway/internal/koor"
)

// koorProviders lists auth's OpenID providers for Koor's /api/config.
func koorProviders(conn grpc.ClientConnInterface) koor.Providers {
	c := authpb.NewOIDCServiceClient(conn)
	return func(ctx context.Context) ([]koor.Provider, error) {
		resp, err := c.ListProviders(ctx, &authpb.ListProvidersRequest{})
		if err != nil {
			return nil, err
		}
		out := make([]koor.Provider, 0, len(resp.GetProviders()))
		for _, p := range resp.GetProviders() {
			out = append(out, koor.Provider{Name: p.GetName(), Label: p.GetLabel()})
		}
		return out, nil
	}
}
