package grpc

import (
	"context"
	"errors"
	"log/slog"

	tspb "github.com/plinth-dev/plinth/libs/api/resources/timestamp"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// AuthServer implements services.auth.AuthService: validate → identity.Service → toStatus.
type AuthServer struct {
	authpb.UnimplementedAuthServiceServer
	svc     *identity.Service
	log     *slog.Logger
	clients *ClientAddress
}

// NewAuthServer serves svc; clients says how to find the caller's address for lockouts.
func NewAuthServer(svc *identity.Service, clients *ClientAddress, log *slog.Logger) *AuthServer {
	return &AuthServer{svc: svc, log: log, clients: clients}
}

// Login checks the credentials and returns a token with its expiry and the user id.
func (s *AuthServer) Login(ctx context.Context, req *authpb.LoginRequest) (*authpb.LoginResponse, error) {
	token, t, err := s.svc.Login(ctx, req.GetUsername(), req.GetPassword(), s.clients.Of(ctx))
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "username", input.Quote(req.GetUsername()))
	}
	return &authpb.LoginResponse{
		Token:     token,
		Expires:   &tspb.Timestamp{Timestamp: timestamppb.New(t.ExpiresAt)},
		AccountId: t.UserID,
	}, nil
}

// Logout revokes the token in the call's `authorization: Bearer` metadata (LogoutRequest is
// empty upstream). success is false only when no token was presented.
func (s *AuthServer) Logout(ctx context.Context, _ *authpb.LogoutRequest) (*authpb.LogoutResponse, error) {
	err := s.svc.Logout(ctx, authn.BearerToken(ctx))
	if errors.Is(err, identity.ErrNoToken) {
		return &authpb.LogoutResponse{Success: false}, nil // upstream's answer, not an error
	}
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	return &authpb.LogoutResponse{Success: true}, nil
}

// CheckToken answers whether the token is live. A bad token is success=false, never an error;
// only a failing database is (Internal), so callers can tell "no" from "don't know".
func (s *AuthServer) CheckToken(ctx context.Context, req *authpb.CheckTokenRequest) (*authpb.CheckTokenResponse, error) {
	a, ok, err := s.svc.CheckToken(ctx, req.GetToken())
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	if ok {
		// The wire message has only `success`; the account (id, username, role) travels as
		// response metadata so Plinth's interceptors can put it into the context and check the
		// role without changing upstream's wire; the token's expiry too, so what a service
		// binds to the session can end with it.
		_ = grpc.SetHeader(ctx, a.TokenHeaders())
	}
	return &authpb.CheckTokenResponse{Success: ok}, nil
}
