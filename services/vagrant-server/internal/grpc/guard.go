package grpc

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"

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
//
// Plinth's own services here (plinth.vagrant.v1.RunnerService) are for Plinth users, not
// Vagrant clients: they need a Plinth bearer token, which PlinthAuth (auth's token check, as
// every Plinth service verifies) accepts; a vagrant-server token is refused there, and a
// Plinth token is refused on the Vagrant API. Without PlinthAuth they are not served.
func (s *Server) Authenticate(ctx context.Context, fullMethod string) (context.Context, error) {
	if service, _, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/"); isPlinthService(service) {
		if s.plinthAuth == nil {
			return nil, toStatus(ctx, s.log, &notServedError{method: fullMethod}, "doing", "authenticate the call")
		}
		// The verifier's errors are gRPC statuses already (Unauthenticated, or Unavailable
		// when auth cannot be asked).
		return s.plinthAuth(ctx, fullMethod)
	}
	caller, err := s.authenticate(ctx, fullMethod)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "doing", "authenticate the call")
	}
	if caller == nil {
		return ctx, nil
	}
	ctx = tokens.WithCaller(ctx, *caller)
	if key := caller.LifetimeKey(); key != "" {
		// A session token's calls end, Unauthenticated, when auth revokes its Plinth token,
		// and a token a Plinth user owns with the user's access (sessions.WatchRevocations
		// ends them): streams must not outlive the credential they started with.
		ctx = s.calls.Bind(ctx, key)
	}
	return ctx, nil
}

// authenticate returns whom the call's token speaks for; nil for the calls that need none.
func (s *Server) authenticate(ctx context.Context, fullMethod string) (*tokens.Caller, error) {
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if service != vagrant.Vagrant_ServiceDesc.ServiceName {
		return nil, &notServedError{method: fullMethod}
	}
	if err := checkProtocol(ctx, method); err != nil {
		return nil, err
	}
	if tokenFree[method] {
		return nil, nil
	}
	token := bearer(ctx)
	if token == "" {
		return nil, errNoToken
	}
	// An error reading the key store is the server's (Unavailable when the database is
	// unreachable): the token may well be good, so the client should retry, not log in.
	caller, err := s.tokens.Authenticate(ctx, token, method)
	if err != nil {
		return nil, err
	}
	return &caller, nil
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
