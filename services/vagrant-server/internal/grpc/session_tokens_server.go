package grpc

import (
	"context"
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
)

// errNoAccount is a SessionTokenService call that reached the handler without a verified
// Plinth account (the guard puts it there): Unauthenticated.
var errNoAccount = errors.New(authn.MsgNoToken)

// SessionTokensServer serves plinth.vagrant.v1.SessionTokenService: a Vagrant login token for
// the caller's Plinth session, so the console needs no second sign-in. Its calls are
// authenticated with Plinth tokens (Server.Authenticate).
type SessionTokensServer struct {
	vagrantv1.UnimplementedSessionTokenServiceServer
	s        *Server
	sessions *sessions.Service
}

// SessionTokens returns the plinth.vagrant.v1.SessionTokenService of this server over svc.
func (s *Server) SessionTokens(svc *sessions.Service) *SessionTokensServer {
	return &SessionTokensServer{s: s, sessions: svc}
}

// IssueSessionToken issues a Vagrant login token bound to the call's Plinth token.
func (t *SessionTokensServer) IssueSessionToken(ctx context.Context, _ *vagrantv1.IssueSessionTokenRequest) (*vagrantv1.IssueSessionTokenResponse, error) {
	account, ok := authn.AccountFrom(ctx)
	plinth := authn.BearerToken(ctx)
	if !ok || plinth == "" {
		return nil, toStatus(ctx, t.s.log, errNoAccount, "doing", "issue a session token")
	}
	issued, err := t.sessions.Issue(ctx, account, authn.TokenID(plinth))
	if err != nil {
		return nil, toStatus(ctx, t.s.log, err, "doing", "issue a session token", "user_id", account.ID)
	}
	return &vagrantv1.IssueSessionTokenResponse{
		Token: issued.Token, ExpiresAt: timestamppb.New(issued.ExpiresAt), Role: string(issued.Role),
	}, nil
}
