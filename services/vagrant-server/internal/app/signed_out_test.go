package app_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// TestOwnedTokensEndWithTheirUserAfterSignOut is the attacker's way round
// TestOwnedLoginTokensEndWithTheirUser: make a login token and an invite through a session,
// sign out of Plinth, and so hold no live Plinth token when an admin disables you, changes your
// role or revokes your tokens — a change that revokes no token publishes no token.revoked. The
// login token's open log stream still ends Unauthenticated within a second of the change, the
// token is refused within a second, and the invite can no longer be converted.
func TestOwnedTokensEndWithTheirUserAfterSignOut(t *testing.T) {
	t.Parallel()
	e, auth, c, st, _, vm := loggedTarget(t)
	users := adminpb.NewAdminServiceClient(auth.conn)

	for _, tc := range []struct {
		user, change string
		do           func() error
	}{
		{"ivy", "disabled", func() error {
			_, err := users.SetUserDisabled(auth.admin, &adminpb.SetUserDisabledRequest{Username: "ivy", Disabled: true})
			return err
		}},
		{"rex", "given another role", func() error {
			_, err := users.SetUserRole(auth.admin, &adminpb.SetUserRoleRequest{Username: "rex", Role: "viewer"})
			return err
		}},
		{"uma", "revoked by an admin", func() error {
			_, err := users.RevokeUserTokens(auth.admin, &adminpb.RevokeUserTokensRequest{Username: "uma"})
			return err
		}},
	} {
		plinth := auth.user(t, tc.user, "admin")
		session := e.issue(t, st, plinth).GetToken()
		login := e.secret(must(c.GenerateLoginToken(withRole(t, session, "operator"), &emptypb.Empty{}))(t).GetToken())
		invite := e.secret(must(c.GenerateInviteToken(withRole(t, session, "viewer"), &vagrant.InviteTokenRequest{Duration: "1h"}))(t).GetToken())
		if _, err := authpb.NewAuthServiceClient(auth.conn).Logout(plinthCall(t, plinth), &authpb.LogoutRequest{}); err != nil {
			t.Fatal(err)
		}
		waitRefused(t, c, session, "after its user signed out")
		must(c.ListBasis(call(t, login), &emptypb.Empty{}))(t) // the login token is the user's, not the session's

		logs := openLogStream(t, c, login, &vagrant.GetLogStreamRequest{Scope: &vagrant.GetLogStreamRequest_Target{Target: vm}})
		logs.take(t, 1)
		if err := tc.do(); err != nil {
			t.Fatal(err)
		}
		changed := time.Now()
		what := "a signed-out user's login token, " + tc.user + " " + tc.change
		endedWithin(t, what+": its GetLogStream", logs.end, changed, time.Second)
		refusedWithin(t, what, login, changed, time.Second, func(ctx context.Context) error {
			_, err := c.ListBasis(ctx, &emptypb.Empty{})
			return err
		})
		// Converting is unauthenticated: the invite is the credential.
		refusedWithin(t, "converting the invite of "+tc.user+" "+tc.change, "", changed, time.Second, func(ctx context.Context) error {
			_, err := c.ConvertInviteToken(ctx, &vagrant.ConvertInviteTokenRequest{Token: invite})
			return err
		})
	}
}

// refusedWithin requires that do, called with token, is refused Unauthenticated within d of
// since; it calls again every 20 ms until then.
func refusedWithin(t *testing.T, what, token string, since time.Time, d time.Duration, do func(context.Context) error) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(callCtx(token), 5*time.Second)
		err := do(ctx)
		cancel()
		if err != nil {
			code(t, what, err, codes.Unauthenticated)
			return
		}
		if took := time.Since(since); took > d {
			t.Fatalf("%s: still accepted %v after the change, want refused within %v", what, took, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
