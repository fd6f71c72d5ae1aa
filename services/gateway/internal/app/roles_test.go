package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// kaasBackend answers the kaas calls the roles test makes.
type kaasBackend struct {
	kaaspb.UnimplementedClusterServer
}

func (kaasBackend) GetClusterList(context.Context, *kaaspb.GetClusterListMsg) (*kaaspb.GetClusterListReply, error) {
	return &kaaspb.GetClusterListReply{}, nil
}

func (kaasBackend) CreateCluster(context.Context, *kaaspb.CreateClusterMsg) (*kaaspb.CreateClusterReply, error) {
	return &kaaspb.CreateClusterReply{}, nil
}

// lvBackend is lvmd's LVService whose calls all reach the backend's interceptor (and answer
// Unimplemented after it).
type lvBackend struct {
	lvmdpb.UnimplementedLVServiceServer
}

// TestGatewayEnforcesRoles: through the gateway, a viewer's token reads (stats, kaas's list)
// but its writes (kaas CreateCluster, lvmd CreateLV) and user administration are refused with
// PermissionDenied before any backend sees them; an operator's token writes but may not
// administer users; the backend is told the verified account's id, name and role.
func TestGatewayEnforcesRoles(t *testing.T) {
	s := newSuite(t)
	kaas := newRecorder()
	gk := kaas.server(t)
	kaaspb.RegisterClusterServer(gk, kaasBackend{})
	kaasAddr := serve(t, gk, "tcp", "127.0.0.1:0")
	// The suite's lvmd backend serves VGService only; this test's lvmd also serves LVService.
	lv := newRecorder()
	gl := lv.server(t)
	lvmdpb.RegisterLVServiceServer(gl, lvBackend{})
	lvSock := shortTempDir(t) + "/lvmd.sock"
	serve(t, gl, "unix", lvSock)
	g := s.gateway(t, app.Options{}, "PLINTH_GATEWAY_BACKEND_KAAS="+kaasAddr, "PLINTH_GATEWAY_BACKEND_LVMD_AGENT=unix://"+lvSock)

	ctx := ctxT(t)
	root := bearer(ctx, login(t, g.conn))
	users := adminpb.NewAdminServiceClient(g.conn)
	tokens := map[string]context.Context{}
	for name, role := range map[string]string{"vera": "viewer", "otto": "operator"} {
		if _, err := users.CreateUser(root, &adminpb.CreateUserRequest{Username: name, Password: name + "-password", Role: role}); err != nil {
			t.Fatal(err)
		}
		resp, err := authpb.NewAuthServiceClient(g.conn).Login(ctx, &authpb.LoginRequest{Username: name, Password: name + "-password"})
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = bearer(ctx, resp.GetToken())
	}

	stats, clusters, lvs := statspb.NewStatsServiceClient(g.conn), kaaspb.NewClusterClient(g.conn), lvmdpb.NewLVServiceClient(g.conn)
	calls := map[string]struct {
		call    func(ctx context.Context) error
		backend *recorder
	}{
		"stats GetClusterStats": {func(ctx context.Context) error {
			_, err := stats.GetClusterStats(ctx, &statspb.GetClusterStatsRequest{})
			return err
		}, s.stats},
		"kaas GetClusterList": {func(ctx context.Context) error {
			_, err := clusters.GetClusterList(ctx, &kaaspb.GetClusterListMsg{})
			return err
		}, kaas},
		"kaas CreateCluster": {func(ctx context.Context) error {
			_, err := clusters.CreateCluster(ctx, &kaaspb.CreateClusterMsg{})
			return err
		}, kaas},
		"lvmd CreateLV": {func(ctx context.Context) error {
			_, err := lvs.CreateLV(ctx, &lvmdpb.CreateLVRequest{})
			if status.Code(err) == codes.Unimplemented {
				return nil // it reached this test's LVService, which implements nothing
			}
			return err
		}, lv},
		"AdminService ListUsers": {func(ctx context.Context) error {
			_, err := users.ListUsers(ctx, &adminpb.ListUsersRequest{})
			return err
		}, nil},
	}
	allowed := map[string]map[string]bool{
		"vera": {"stats GetClusterStats": true, "kaas GetClusterList": true},
		"otto": {"stats GetClusterStats": true, "kaas GetClusterList": true, "kaas CreateCluster": true, "lvmd CreateLV": true},
	}
	for user, role := range map[string]string{"vera": "viewer", "otto": "operator"} {
		for name, c := range calls {
			if c.backend != nil {
				c.backend.take()
			}
			err := c.call(tokens[user])
			if allowed[user][name] {
				if err != nil {
					t.Fatalf("%s (%s): %s: %v", user, role, name, err)
				}
				md := c.backend.take()
				if md == nil || md.Get(authn.NameHeader)[0] != user || md.Get(authn.RoleHeader)[0] != role || md.Get(authn.AccountHeader)[0] == "" {
					t.Fatalf("%s: %s: the backend saw %v, want the account's id, name and role", user, name, md)
				}
				continue
			}
			if status.Code(err) != codes.PermissionDenied {
				t.Fatalf("%s (%s): %s: %v, want PermissionDenied", user, role, name, err)
			}
			if c.backend != nil && c.backend.take() != nil {
				t.Fatalf("%s: a refused %s reached the backend", user, name)
			}
		}
	}
	// Every method of the routed services, as each role: the refusals are exactly authz's.
	services := []string{"cnct.kaas.api.Cluster", "proto.LVService", "proto.VGService", "stats.StatsService", "plinth.auth.v1.AdminService"}
	for user, role := range map[string]authz.Role{"vera": authz.Viewer, "otto": authz.Operator} {
		md, _ := metadata.FromOutgoingContext(tokens[user])
		t.Run(string(role), func(t *testing.T) {
			hostiletest.RunRole(t, hostiletest.Target{Conn: g.conn, Services: services, Metadata: md}, role)
		})
	}
	// Under the /api prefix (Koor's UI, any protocol) the roles are the same: the viewer may
	// read stats and is refused kaas's CreateCluster and AdminService, before their backends.
	vmd, _ := metadata.FromOutgoingContext(tokens["vera"])
	vtoken := strings.TrimPrefix(vmd.Get("authorization")[0], "Bearer ")
	for path, want := range map[string]int{
		"/api/stats.StatsService/GetClusterStats":    http.StatusOK,
		"/api/cnct.kaas.api.Cluster/CreateCluster":   http.StatusForbidden,
		"/api/plinth.auth.v1.AdminService/ListUsers": http.StatusForbidden,
		"/api/cnct.kaas.api.Cluster/GetClusterList":  http.StatusOK,
	} {
		kaas.take()
		if resp, body := koorHTTP(t, http.MethodPost, "http://"+g.addr+path, vtoken, "{}"); resp.StatusCode != want {
			t.Fatalf("viewer: %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
		if want == http.StatusForbidden && kaas.take() != nil {
			t.Fatalf("viewer: a refused %s reached kaas", path)
		}
	}
	if err := g.conn.Invoke(tokens["vera"], "/api/cnct.kaas.api.Cluster/CreateCluster", &kaaspb.CreateClusterMsg{}, &kaaspb.CreateClusterReply{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("viewer: gRPC under /api: CreateCluster: %v", err)
	}
	// The admin may still do everything.
	if _, err := users.ListUsers(root, &adminpb.ListUsersRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.CreateCluster(root, &kaaspb.CreateClusterMsg{}); err != nil {
		t.Fatal(err)
	}
}
