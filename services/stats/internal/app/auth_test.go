package app_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	koorstats "github.com/plinth-dev/plinth/libs/api/api/services/stats/v1"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
)

// TestEveryCallNeedsAValidToken: as upstream, each RPC refuses a missing or invalid token with
// upstream's messages; a valid one is checked with auth once and then cached; with auth
// unreachable, an unknown token is Unavailable (retry), not "log in again".
func TestEveryCallNeedsAValidToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, e.config(t))
	c, conn := in.client, in.conn
	calls := map[string]func(ctx context.Context) error{
		"/stats.StatsService/GetClusterStats": func(ctx context.Context) error {
			_, err := c.GetClusterStats(ctx, &statspb.GetClusterStatsRequest{})
			return err
		},
		"/stats.StatsService/GetClusterResources": func(ctx context.Context) error {
			_, err := c.GetClusterResources(ctx, &statspb.GetClusterResourcesRequest{})
			return err
		},
		"/stats.StatsService/GetClusterNodes": func(ctx context.Context) error {
			_, err := c.GetClusterNodes(ctx, &statspb.GetClusterNodesRequest{})
			return err
		},
		"/stats.StatsService/GetClusterRadar": func(ctx context.Context) error {
			_, err := c.GetClusterRadar(ctx, &statspb.GetClusterRadarRequest{})
			return err
		},
		"/stats.StatsService/GetKoorCluster": func(ctx context.Context) error {
			_, err := c.GetKoorCluster(ctx, &statspb.GetKoorClusterRequest{})
			return err
		},
	}
	// Koor's released wire: the same rule for every call.
	for name, call := range koorV1Calls(koorstats.NewStatsServiceClient(conn)) {
		calls[name] = call
	}
	for name, call := range calls {
		for _, tc := range []struct {
			ctx  context.Context
			code codes.Code
			msg  string
		}{
			{ctxT(t), codes.Unauthenticated, authn.MsgNoToken},
			{bearer(ctxT(t), "plt_not-a-token"), codes.Unauthenticated, authn.MsgInvalidToken},
			{metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Basic dXNlcjpwdw=="), codes.Unauthenticated, authn.MsgNoToken},
		} {
			if err := call(tc.ctx); status.Code(err) != tc.code || status.Convert(err).Message() != tc.msg {
				t.Errorf("%s: %v, want %v %q", name, err, tc.code, tc.msg)
			}
		}
		if err := call(authed(t)); status.Code(err) == codes.Unauthenticated || status.Code(err) == codes.PermissionDenied {
			t.Errorf("%s with a viewer's token: %v", name, err)
		}
		// A live token whose account has no role (auth named none) may call nothing.
		want := authz.Check("", name).Error()
		if err := call(bearer(ctxT(t), noRoleToken)); status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != want {
			t.Errorf("%s without a role: %v, want PermissionDenied %q", name, err, want)
		}
	}
	// Refusals are never cached (one per RPC); each live token's yes is, once.
	if n := e.auth.calls.Load(); n != int32(len(calls))+2 {
		t.Errorf("auth was asked %d times; want %d", n, len(calls)+2)
	}
	e.authSrv.Stop()
	if err := calls["/stats.StatsService/GetClusterRadar"](bearer(ctxT(t), "plt_uncached-token")); status.Code(err) != codes.Unavailable {
		t.Errorf("auth unreachable: %v, want Unavailable", err)
	}
	// Past the token check the call may still find no source answered yet (Unavailable with
	// stats' own message): only the token check's answers count here.
	if err := calls["/stats.StatsService/GetClusterRadar"](authed(t)); status.Code(err) == codes.Unauthenticated || status.Convert(err).Message() == authn.MsgAuthUnavailable {
		t.Errorf("a cached token must pass while auth is away: %v", err)
	}
}

// TestHostileClient probes every stats RPC with huge and NUL strings, unknown fields, garbage
// and oversized metadata: each is refused with a documented code and a short message, and
// stats keeps answering.
func TestHostileClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.start(t, e.config(t))
	hostiletest.Run(t, hostiletest.Target{
		Conn:     in.conn,
		Services: []string{"stats.StatsService", "api.services.stats.v1.StatsService"},
		Metadata: metadata.Pairs("authorization", "Bearer "+validToken),
		// Unavailable: until the inventory's first refresh no source has answered.
		Allowed: append(append([]codes.Code(nil), hostiletest.Default...), codes.Unavailable),
	})
}
