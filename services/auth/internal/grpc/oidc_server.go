package grpc

import (
	"context"
	"log/slog"

	"google.golang.org/protobuf/types/known/timestamppb"

	authpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/auth/internal/sso"
)

// OIDCServer implements plinth.auth.v1.OIDCService: validate → sso.Service (the state, the
// provider's code and ID token) → identity.Service.SignInExternal (the token, as Login's) →
// toStatus. Codes, states and tokens are never logged nor quoted in errors.
type OIDCServer struct {
	authpb.UnimplementedOIDCServiceServer
	svc     *sso.Service
	clients *ClientAddress
	log     *slog.Logger
}

// NewOIDCServer serves svc, finding a sign-in's client address with clients (the gateway's
// x-forwarded-for on its listener), as Login does.
func NewOIDCServer(svc *sso.Service, clients *ClientAddress, log *slog.Logger) *OIDCServer {
	return &OIDCServer{svc: svc, clients: clients, log: log}
}

// ListProviders lists the configured providers and whether password login is on.
func (s *OIDCServer) ListProviders(context.Context, *authpb.ListProvidersRequest) (*authpb.ListProvidersResponse, error) {
	ps, password := s.svc.Providers()
	out := &authpb.ListProvidersResponse{PasswordLogin: password, Providers: make([]*authpb.Provider, 0, len(ps))}
	for _, p := range ps {
		out.Providers = append(out.Providers, &authpb.Provider{Name: p.Name, Label: p.Label})
	}
	return out, nil
}

// BeginSignIn stores a new state and returns the provider's authorization URL.
func (s *OIDCServer) BeginSignIn(ctx context.Context, req *authpb.BeginSignInRequest) (*authpb.BeginSignInResponse, error) {
	b, err := s.svc.Begin(ctx, req.GetProvider(), req.GetRedirectUri())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "provider", input.Quote(req.GetProvider()))
	}
	return &authpb.BeginSignInResponse{AuthorizationUrl: b.URL, State: b.State, ExpireTime: timestamppb.New(b.ExpiresAt), Provider: b.Provider}, nil
}

// CompleteSignIn checks the provider's answer and issues a Plinth token.
func (s *OIDCServer) CompleteSignIn(ctx context.Context, req *authpb.CompleteSignInRequest) (*authpb.CompleteSignInResponse, error) {
	done, err := s.svc.Complete(ctx, sso.Callback{Code: req.GetCode(), State: req.GetState(), RedirectURI: req.GetRedirectUri(),
		Provider: req.GetProvider(), ClientAddr: s.clients.Of(ctx)})
	if err != nil {
		s.log.InfoContext(ctx, "OpenID sign-in refused", "provider", input.Quote(req.GetProvider()), "error", err.Error())
		return nil, toStatus(ctx, s.log, err, "provider", input.Quote(req.GetProvider()))
	}
	return &authpb.CompleteSignInResponse{Token: done.Token, ExpireTime: timestamppb.New(done.Record.ExpiresAt),
		AccountId: done.User.ID, Username: done.User.Username, Role: string(done.User.Role), Provider: done.Provider}, nil
}
