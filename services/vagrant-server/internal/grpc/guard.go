package grpc

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// tokenFree are the calls made before a client has a login token. They still negotiate the
// protocol version.
var tokenFree = map[string]bool{"BootstrapToken": true, "ConvertInviteToken": true}

// AuthExempt lists the calls that skip Authenticate entirely (server.Options.AuthExempt):
// GetVersionInfo needs neither a token nor the protocol header. Health and reflection are
// exempt in every Plinth server.
func AuthExempt() []string { return []string{vagrant.Vagrant_GetVersionInfo_FullMethodName} }

// Authenticate is the server's auth hook (server.Options.Authenticate), run for unary and
// streaming calls alike. In upstream's order it first negotiates the protocol version from
// client-api-protocol (InvalidArgument when missing or out of range), then requires a valid
// login token in the `authorization` metadata (raw, as Vagrant clients send it, or after
// "Bearer ") except for BootstrapToken and ConvertInviteToken.
func (s *Server) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if service != vagrant.Vagrant_ServiceDesc.ServiceName {
		return nil, status.Errorf(codes.PermissionDenied, "%s is not served here", fullMethod)
	}
	if err := checkProtocol(ctx, method); err != nil {
		return nil, err
	}
	if tokenFree[method] {
		return ctx, nil
	}
	token := bearer(ctx)
	if token == "" {
		return nil, status.Error(codes.Unauthenticated, "Authorization token is not supplied")
	}
	err := s.tokens.Authenticate(ctx, token, method)
	switch {
	case err == nil:
		return ctx, nil
	case errors.Is(err, tokens.ErrExpired):
		return nil, status.Error(codes.Unauthenticated, "token has expired")
	case errors.Is(err, tokens.ErrInvalid):
		s.log.DebugContext(ctx, "token refused", "grpc.method", method, "reason", err.Error())
		return nil, status.Error(codes.Unauthenticated, tokens.ErrInvalid.Error())
	}
	// The key store could not be read: the token may well be good, so the client should
	// retry rather than log in again.
	s.log.ErrorContext(ctx, "cannot verify token", "grpc.method", method, "error", err)
	return nil, status.Error(codes.Unavailable, "cannot verify the token right now; retry")
}

// bearer returns the token in the call's authorization metadata.
func bearer(ctx context.Context) string {
	vs := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(vs) == 0 {
		return ""
	}
	v := strings.TrimSpace(vs[0])
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		v = strings.TrimSpace(v[7:])
	}
	return v
}
