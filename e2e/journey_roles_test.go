package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	catalogpb "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	lvmdjobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	historypb "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/events"
)

// roleUser is a user the admin created with a role, signed in through the gateway.
type roleUser struct {
	name, id, token string
}

// journeyRoles: the admin creates a viewer and an operator through AdminService. The viewer
// reads what every console page reads, and every write it tries is refused with
// PermissionDenied, as is user administration; the operator writes (a volume on lvmd-agent, a
// kaas call) but may not administer users, and the events of its writes name it as actor.
// Last, the admin makes the viewer an operator: its old token stops working and a new
// sign-in may write.
func (s *journeySuite) journeyRoles(t *testing.T) {
	adminToken := s.login(t)
	admin := adminpb.NewAdminServiceClient(s.gw)
	suffix := randomHex(t, 3)
	viewer := s.createRoleUser(t, admin, adminToken, "viewer-"+suffix, "viewer")
	operator := s.createRoleUser(t, admin, adminToken, "operator-"+suffix, "operator")

	// The role reaches the console the way it asks for it: CheckToken's response header.
	for _, u := range []struct {
		roleUser
		role string
	}{{viewer, "viewer"}, {operator, "operator"}} {
		var header metadata.MD
		resp, err := authpb.NewAuthServiceClient(s.gw).CheckToken(callCtx(t), &authpb.CheckTokenRequest{Token: u.token}, grpc.Header(&header))
		if err != nil || !resp.GetSuccess() {
			t.Fatalf("CheckToken of %s's token: %v, %v", u.name, resp, err)
		}
		if got := header.Get("plinth-account-role"); len(got) != 1 || got[0] != u.role {
			t.Errorf("CheckToken names %s's role %v through the gateway, want [%s]", u.name, got, u.role)
		}
	}

	t.Run("ViewerReadsEveryPage", func(t *testing.T) {
		for _, p := range s.pageReads(t) {
			succeeds(t, s.gw, p, viewer.token)
		}
	})
	t.Run("ViewerRefusedWrites", func(t *testing.T) {
		for _, p := range s.writeProbes(t, "viewer-"+suffix) {
			wantCode(t, "viewer: "+p.name, p.call(withToken(callCtx(t), viewer.token), s.gw), codes.PermissionDenied)
		}
		_, err := admin.ListUsers(withToken(callCtx(t), viewer.token), &adminpb.ListUsersRequest{})
		wantCode(t, "viewer: AdminService ListUsers", err, codes.PermissionDenied)
		_, err = admin.CreateUser(withToken(callCtx(t), viewer.token), &adminpb.CreateUserRequest{Username: "x-" + suffix, Role: "admin"})
		wantCode(t, "viewer: AdminService CreateUser", err, codes.PermissionDenied)
	})
	t.Run("OperatorWritesAndIsTheActor", func(t *testing.T) {
		for _, p := range s.pageReads(t) {
			succeeds(t, s.gw, p, operator.token)
		}
		_, err := admin.ListUsers(withToken(callCtx(t), operator.token), &adminpb.ListUsersRequest{})
		wantCode(t, "operator: AdminService ListUsers", err, codes.PermissionDenied)
		_, err = admin.SetUserRole(withToken(callCtx(t), operator.token), &adminpb.SetUserRoleRequest{Username: operator.name, Role: "admin"})
		wantCode(t, "operator: AdminService SetUserRole on itself", err, codes.PermissionDenied)
		// A write the operator may make: kaas answers it (NotFound), the gateway lets it through.
		if _, _, ok := s.service("kaas"); ok {
			_, err := kaaspb.NewClusterClient(s.gw).DeleteCluster(withToken(callCtx(t), operator.token), &kaaspb.DeleteClusterMsg{Name: "none-" + suffix})
			wantCode(t, "operator: kaas DeleteCluster of no cluster", err, codes.NotFound)
		}
		if os.Geteuid() != 0 {
			skipOrFail(t, "lvmd-agent's loop-backed volume group needs root")
		}
		s.requireService(t, "lvmd-agent")
		start := time.Now()
		lv := lvmdpb.NewLVServiceClient(s.gw)
		name := "roles-" + suffix
		if _, err := lv.CreateLV(withToken(callCtx(t), operator.token), &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1}); err != nil {
			t.Fatalf("operator: CreateLV through the gateway: %v", err)
		}
		removed := false
		t.Cleanup(func() {
			if !removed {
				_, _ = lv.RemoveLV(withToken(callCtx(t), adminToken), &lvmdpb.RemoveLVRequest{Name: name})
			}
		})
		if _, err := lv.RemoveLV(withToken(callCtx(t), operator.token), &lvmdpb.RemoveLVRequest{Name: name}); err != nil {
			t.Fatalf("operator: RemoveLV through the gateway: %v", err)
		}
		removed = true
		created := &eventsv1.VolumeCreated{}
		waitEvent(t, s.endpoints, created, start, func() bool { return created.GetName() == name })
		gone := &eventsv1.VolumeRemoved{}
		waitEvent(t, s.endpoints, gone, start, func() bool { return gone.GetName() == name })
		for _, a := range []*eventsv1.Actor{created.GetActor(), gone.GetActor()} {
			if a.GetUserId() != operator.id || a.GetUsername() != operator.name {
				t.Errorf("the volume's events name actor %v, want the operator %s (%s)", a, operator.name, operator.id)
			}
		}
		// The audit trail (the console's Activity page) shows both, by the operator; the viewer
		// may read it.
		if _, _, ok := s.service("stats"); ok {
			history := historypb.NewHistoryServiceClient(s.gw)
			var mine []*historypb.Activity
			err := eventually(30*time.Second, 200*time.Millisecond, func() error {
				resp, err := history.ListActivity(withToken(callCtx(t), viewer.token), &historypb.ListActivityRequest{PageSize: 50})
				if err != nil {
					return err
				}
				mine = nil
				for _, a := range resp.GetActivities() {
					if strings.Contains(a.GetSummary(), "volume "+name+" ") {
						mine = append(mine, a)
					}
				}
				if len(mine) != 2 {
					return fmt.Errorf("%d entries for volume %s", len(mine), name)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("ListActivity through the gateway as the viewer: %v", err)
			}
			for _, a := range mine {
				if a.GetActorUserId() != operator.id || a.GetActorUsername() != operator.name {
					t.Errorf("activity %q names %s (%s), want the operator %s", a.GetSummary(), a.GetActorUsername(), a.GetActorUserId(), operator.name)
				}
			}
		}
	})
	t.Run("RoleChangeTakesEffect", func(t *testing.T) {
		if _, err := admin.SetUserRole(withToken(callCtx(t), adminToken), &adminpb.SetUserRoleRequest{Username: viewer.name, Role: "operator"}); err != nil {
			t.Fatalf("SetUserRole viewer -> operator: %v", err)
		}
		err := eventually(10*time.Second, 100*time.Millisecond, func() error {
			_, err := statspb.NewStatsServiceClient(s.gw).GetClusterNodes(withToken(callCtx(t), viewer.token), &statspb.GetClusterNodesRequest{})
			if status.Code(err) != codes.Unauthenticated {
				return fmt.Errorf("stats GetClusterNodes with the old token: %v", err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("the token of a user whose role changed is still accepted: %v", err)
		}
		again := s.signIn(t, viewer.name, viewer.name+"-pw")
		if _, _, ok := s.service("kaas"); ok {
			_, err := kaaspb.NewClusterClient(s.gw).DeleteCluster(withToken(callCtx(t), again), &kaaspb.DeleteClusterMsg{Name: "none-" + suffix})
			wantCode(t, "former viewer, now operator: kaas DeleteCluster of no cluster", err, codes.NotFound)
		}
	})
}

// createRoleUser creates user name with role through AdminService as the admin, and signs
// them in through the gateway. Their password is name + "-pw".
func (s *journeySuite) createRoleUser(t *testing.T, admin adminpb.AdminServiceClient, adminToken, name, role string) roleUser {
	t.Helper()
	resp, err := admin.CreateUser(withToken(callCtx(t), adminToken), &adminpb.CreateUserRequest{Username: name, Password: name + "-pw", Role: role})
	if err != nil {
		t.Fatalf("CreateUser %s (%s): %v", name, role, err)
	}
	if resp.GetUser().GetRole() != role || resp.GetUser().GetAdmin() != (role == "admin") {
		t.Fatalf("CreateUser %s answered %v, want role %s", name, resp.GetUser(), role)
	}
	return roleUser{name: name, id: resp.GetUser().GetId(), token: s.signIn(t, name, name+"-pw")}
}

// signIn logs user in through the gateway and returns the token.
func (s *journeySuite) signIn(t *testing.T, user, password string) string {
	t.Helper()
	resp, err := authpb.NewAuthServiceClient(s.gw).Login(callCtx(t), &authpb.LoginRequest{Username: user, Password: password})
	if err != nil {
		t.Fatalf("Login through the gateway as %s: %v", user, err)
	}
	return resp.GetToken()
}

// pageReads are the reads of every console page (Storage, Activity, Vagrant's runners,
// Clusters, Volumes, Backups), one probe each, for the services this suite runs.
func (s *journeySuite) pageReads(t *testing.T) []probe {
	t.Helper()
	all := []probe{
		{"stats GetClusterStats", "stats", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := statspb.NewStatsServiceClient(c).GetClusterStats(ctx, &statspb.GetClusterStatsRequest{})
			return err
		}},
		{"stats GetCapacityHistory", "stats", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := historypb.NewHistoryServiceClient(c).GetCapacityHistory(ctx, &historypb.GetCapacityHistoryRequest{})
			return err
		}},
		{"stats ListActivity", "stats", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := historypb.NewHistoryServiceClient(c).ListActivity(ctx, &historypb.ListActivityRequest{})
			return err
		}},
		{"vagrant-server ListRunners", "vagrant-server", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := vagrantv1.NewRunnerServiceClient(c).ListRunners(ctx, &vagrantv1.ListRunnersRequest{})
			return err
		}},
		{"kaas GetClusterList", "kaas", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := kaaspb.NewClusterClient(c).GetClusterList(ctx, &kaaspb.GetClusterListMsg{})
			return err
		}},
		{"kaas GetCatalog", "kaas", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := kaasv1.NewClusterInfoServiceClient(c).GetCatalog(ctx, &kaasv1.GetCatalogRequest{})
			return err
		}},
		{"cnpgi-plugin ListServers", "cnpgi-plugin", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := catalogpb.NewCatalogServiceClient(c).ListServers(ctx, &catalogpb.ListServersRequest{})
			return err
		}},
	}
	if os.Geteuid() == 0 {
		all = append(all,
			probe{"lvmd-agent GetLVList", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
				_, err := lvmdpb.NewVGServiceClient(c).GetLVList(ctx, &lvmdpb.GetLVListRequest{})
				return err
			}},
			probe{"lvmd-agent ListJobs", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
				_, err := lvmdjobspb.NewJobServiceClient(c).ListJobs(ctx, &lvmdjobspb.ListJobsRequest{})
				return err
			}},
			probe{"lvmd-agent ListVolumes", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
				_, err := lvmdjobspb.NewVolumeServiceClient(c).ListVolumes(ctx, &lvmdjobspb.ListVolumesRequest{})
				return err
			}})
	}
	var ps []probe
	for _, p := range all {
		if _, _, ok := s.service(p.backend); ok {
			ps = append(ps, p)
		} else {
			t.Logf("%s is not running: %s not probed", p.backend, p.name)
		}
	}
	if len(ps) == 0 {
		skipOrFail(t, "no service of a console page runs in this suite")
	}
	return ps
}

// writeProbes are writes of the console's pages that a viewer must not make; name is free
// (no cluster or volume has it), so a write let through would change something visible.
func (s *journeySuite) writeProbes(t *testing.T, name string) []probe {
	t.Helper()
	all := []probe{
		{"kaas CreateCluster", "kaas", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := kaaspb.NewClusterClient(c).CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
				ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}})
			return err
		}},
		{"kaas DeleteCluster", "kaas", func(ctx context.Context, c grpc.ClientConnInterface) error {
			_, err := kaaspb.NewClusterClient(c).DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name})
			return err
		}},
	}
	if os.Geteuid() == 0 {
		all = append(all,
			probe{"lvmd-agent CreateLV", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
				_, err := lvmdpb.NewLVServiceClient(c).CreateLV(ctx, &lvmdpb.CreateLVRequest{Name: name, SizeGb: 1})
				return err
			}},
			probe{"lvmd-agent RemoveLV", "lvmd-agent", func(ctx context.Context, c grpc.ClientConnInterface) error {
				_, err := lvmdpb.NewLVServiceClient(c).RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name})
				return err
			}})
	}
	var ps []probe
	for _, p := range all {
		if _, _, ok := s.service(p.backend); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// waitEvent reads the stream of m's type on the suite's NATS from start until a message of
// m's subject that match accepts (match sees it unmarshalled into m).
func waitEvent(t *testing.T, e endpoints, m proto.Message, start time.Time, match func() bool) {
	t.Helper()
	nc := connectNATS(t, e)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subject := events.SubjectOf(m)
	cons, err := js.OrderedConsumer(callCtx(t), events.StreamOf(m).Name, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start})
	if err != nil {
		t.Fatalf("consume %s: %v", subject, err)
	}
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(30 * time.Second))
		if err != nil {
			t.Fatalf("no matching %s event since %s: %v", subject, start.Format(time.RFC3339), err)
		}
		if proto.Unmarshal(msg.Data(), m) == nil && match() {
			return
		}
	}
}
