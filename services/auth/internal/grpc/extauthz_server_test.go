package grpc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc/codes"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestExtAuthzUnderAPIPrefix: Envoy asks ext_authz before it rewrites an /api route's path, so
// auth must judge "/api/<full method>" as the method itself: public paths stay public, roles
// apply to the method, and only the literal prefix, once, is taken off. Over the real store.
func TestExtAuthzUnderAPIPrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := service.OpenPostgres(ctx, testenv.DB(t).URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	svc, err := identity.NewService(store.New(pool), identity.Options{
		Hash:    identity.HashParams{Memory: 8 * 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		Lockout: identity.DefaultLockoutPolicy(), TokenTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddUser(ctx, "vera", "vera-password", authz.Viewer); err != nil {
		t.Fatal(err)
	}
	token, _, err := svc.Login(ctx, "vera", "vera-password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	s := NewExtAuthzServer(svc, DefaultPublicPaths(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	check := func(path, bearer string) codes.Code {
		t.Helper()
		req := &authv3.CheckRequest{Attributes: &authv3.AttributeContext{Request: &authv3.AttributeContext_Request{
			Http: &authv3.AttributeContext_HttpRequest{Path: path, Headers: map[string]string{}}}}}
		if bearer != "" {
			req.Attributes.Request.Http.Headers["authorization"] = "Bearer " + bearer
		}
		resp, err := s.Check(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return codes.Code(resp.GetStatus().GetCode())
	}
	for _, tc := range []struct {
		path, token string
		want        codes.Code
	}{
		{"/api/services.auth.AuthService/Login", "", codes.OK},
		{"/api/services.auth.AuthService/CheckToken?x=1", "", codes.OK},
		{"/api/grpc.health.v1.Health/Check", "", codes.OK},
		{"/api/stats.StatsService/GetClusterStats", "", codes.Unauthenticated},
		{"/api/stats.StatsService/GetClusterStats", token, codes.OK},
		{"/api/cnct.kaas.api.Cluster/GetClusterList", token, codes.OK},
		{"/api/cnct.kaas.api.Cluster/DeleteCluster", token, codes.PermissionDenied},
		{"/cnct.kaas.api.Cluster/DeleteCluster", token, codes.PermissionDenied},
		{"/stats.StatsService/GetClusterStats", token, codes.OK},
		// Only "/api/" once: the rest names no method a viewer may read, nor a public one.
		{"/api/api/stats.StatsService/GetClusterStats", token, codes.PermissionDenied},
		{"/api/api/services.auth.AuthService/Login", "", codes.Unauthenticated},
		{"/apix/services.auth.AuthService/Login", "", codes.Unauthenticated},
		{"/API/services.auth.AuthService/Login", "", codes.Unauthenticated},
		{"/api%2Fservices.auth.AuthService/Login", "", codes.Unauthenticated},
	} {
		if got := check(tc.path, tc.token); got != tc.want {
			t.Errorf("%s (token %v): %s, want %s", tc.path, tc.token != "", got, tc.want)
		}
	}
}
