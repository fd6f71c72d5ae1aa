package grpc

import (
	"context"

	authv1 "github.com/plinth-dev/plinth/libs/api/api/services/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// AuthV1Server implements api.services.auth.v1.AuthService, the sign-in wire of every released
// Koor UI, by handing each call to the seed's AuthServer: the same validation, lockout, tokens,
// errors and response metadata. Only the messages differ: expires is a plain Timestamp, and
// LogoutResponse may carry redirect_to, which a password sign-in never has.
type AuthV1Server struct {
	authv1.UnimplementedAuthServiceServer
	seed *AuthServer
}

// NewAuthV1Server serves the v1 wire over seed.
func NewAuthV1Server(seed *AuthServer) *AuthV1Server {
	return &AuthV1Server{seed: seed}
}

// Login checks the credentials and returns a token with its expiry and the user id.
func (s *AuthV1Server) Login(ctx context.Context, req *authv1.LoginRequest) (*authv1.LoginResponse, error) {
	r, err := s.seed.Login(ctx, &authpb.LoginRequest{Username: req.GetUsername(), Password: req.GetPassword()})
	if err != nil {
		return nil, err
	}
	return &authv1.LoginResponse{Token: r.GetToken(), Expires: r.GetExpires().GetTimestamp(), AccountId: r.GetAccountId()}, nil
}

// Logout revokes the token in the call's `authorization: Bearer` metadata; success is false
// only when no token was presented.
func (s *AuthV1Server) Logout(ctx context.Context, _ *authv1.LogoutRequest) (*authv1.LogoutResponse, error) {
	r, err := s.seed.Logout(ctx, &authpb.LogoutRequest{})
	if err != nil {
		return nil, err
	}
	return &authv1.LogoutResponse{Success: r.GetSuccess()}, nil
}

// CheckToken answers whether the token is live (the account travels as response metadata).
func (s *AuthV1Server) CheckToken(ctx context.Context, req *authv1.CheckTokenRequest) (*authv1.CheckTokenResponse, error) {
	r, err := s.seed.CheckToken(ctx, &authpb.CheckTokenRequest{Token: req.GetToken()})
	if err != nil {
		return nil, err
	}
	return &authv1.CheckTokenResponse{Success: r.GetSuccess()}, nil
}
