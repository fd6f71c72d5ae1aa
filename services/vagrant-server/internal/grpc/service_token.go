package grpc

import (
	"context"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
)

// BootstrapToken returns the first login token, once per database; afterwards
// PermissionDenied. It needs no token (there is none yet).
func (s *Server) BootstrapToken(ctx context.Context, _ *emptypb.Empty) (*vagrant.NewTokenResponse, error) {
	tok, err := s.tokens.Bootstrap(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "bootstrap")
	}
	s.log.InfoContext(ctx, "server bootstrapped: signing key created and first login token issued")
	return &vagrant.NewTokenResponse{Token: tok}, nil
}

// GenerateLoginToken returns a new login token.
func (s *Server) GenerateLoginToken(ctx context.Context, _ *emptypb.Empty) (*vagrant.NewTokenResponse, error) {
	tok, err := s.tokens.LoginToken(ctx)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "generate a login token")
	}
	return &vagrant.NewTokenResponse{Token: tok}, nil
}

// GenerateInviteToken returns an invite valid for the request's duration ("24h").
func (s *Server) GenerateInviteToken(ctx context.Context, req *vagrant.InviteTokenRequest) (*vagrant.NewTokenResponse, error) {
	tok, err := s.tokens.InviteToken(ctx, req.GetDuration(), req.GetEntrypoint())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "generate an invite token")
	}
	return &vagrant.NewTokenResponse{Token: tok}, nil
}

// ConvertInviteToken exchanges a valid invite for a login token. It needs no login token:
// the invite is the credential.
func (s *Server) ConvertInviteToken(ctx context.Context, req *vagrant.ConvertInviteTokenRequest) (*vagrant.NewTokenResponse, error) {
	tok, err := s.tokens.ConvertInvite(ctx, req.GetToken())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "convert an invite token")
	}
	return &vagrant.NewTokenResponse{Token: tok}, nil
}
