package grpc

import (
	"context"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
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

// GenerateLoginToken returns a new login token, owned by the caller's owner, of the role the
// call's plinth-vagrant-token-role metadata names (the caller's own when absent; never
// above it).
func (s *Server) GenerateLoginToken(ctx context.Context, _ *emptypb.Empty) (*vagrant.NewTokenResponse, error) {
	by, role, err := tokenMaker(ctx)
	if err == nil {
		var tok string
		if tok, err = s.tokens.LoginToken(ctx, by, role); err == nil {
			s.log.InfoContext(ctx, "login token issued", "owner", by.Owner, "role", string(orRole(role, by.Role)))
			return &vagrant.NewTokenResponse{Token: tok}, nil
		}
	}
	return nil, toStatus(ctx, s.log, err, "doing", "generate a login token")
}

// GenerateInviteToken returns an invite valid for the request's duration ("24h"), whose
// login token gets the role GenerateLoginToken would give.
func (s *Server) GenerateInviteToken(ctx context.Context, req *vagrant.InviteTokenRequest) (*vagrant.NewTokenResponse, error) {
	by, role, err := tokenMaker(ctx)
	if err == nil {
		var tok string
		if tok, err = s.tokens.InviteToken(ctx, by, role, req.GetDuration(), req.GetEntrypoint()); err == nil {
			s.log.InfoContext(ctx, "invite token issued", "owner", by.Owner, "role", string(orRole(role, by.Role)))
			return &vagrant.NewTokenResponse{Token: tok}, nil
		}
	}
	return nil, toStatus(ctx, s.log, err, "doing", "generate an invite token")
}

// tokenMaker is the caller making a token and the role it asks for (tokens.RoleHeader;
// empty: the caller's own). A role that is no role is InvalidArgument naming the header.
func tokenMaker(ctx context.Context) (tokens.Caller, authz.Role, error) {
	by, ok := tokens.CallerFrom(ctx)
	if !ok {
		return tokens.Caller{}, "", errNoToken
	}
	vs := metadata.ValueFromIncomingContext(ctx, tokens.RoleHeader)
	if len(vs) == 0 {
		return by, "", nil
	}
	role, err := authz.ParseRole(vs[0])
	if len(vs) > 1 || err != nil {
		return tokens.Caller{}, "", input.Invalid(tokens.RoleHeader, "must be one of viewer, operator, admin, given once")
	}
	return by, role, nil
}

// orRole is role, or def when role is empty.
func orRole(role, def authz.Role) authz.Role {
	if role == "" {
		return def
	}
	return role
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
