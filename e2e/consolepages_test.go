package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	catalogpb "github.com/plinth-dev/plinth/libs/api/plinth/cnpgi/v1"
	jobspb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	historypb "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	vagrantv1 "github.com/plinth-dev/plinth/libs/api/plinth/vagrant/v1"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// journeyConsolePages: what a first `make up` shows. Every service in endpoints.json serves
// (admin /healthz; gRPC health and reflection where it has gRPC), and the API behind each of
// the console's pages answers through the gateway with the machine's real data, not an empty
// shell: Storage (the dev Ceph's pools and a capacity reading), Vagrant (the runner online,
// with kaas's reserved id beside it), Clusters (kaas's version and its list), Volumes (the volume
// group's free bytes and the job list), Backups (the server an earlier journey archived to)
// and Admin (the first user). Run it after a journey that archived WAL.
func (s *journeySuite) journeyConsolePages(t *testing.T) {
	for _, svc := range s.endpoints.Services {
		checkAdmin(t, svc.Name, svc.Admin)
		if svc.GRPC != "" {
			checkGRPC(t, svc.Name, svc.GRPC)
		}
	}
	token := s.login(t)
	ctx := func() context.Context { return withToken(callCtx(t), token) }

	t.Run("Storage", func(t *testing.T) {
		st, err := statspb.NewStatsServiceClient(s.gw).GetClusterStats(ctx(), &statspb.GetClusterStatsRequest{})
		if err != nil || st.GetStats().GetData().GetPools().GetPools() < 1 {
			t.Errorf("GetClusterStats: %v pools, %v; want the dev Ceph's pools", st.GetStats().GetData().GetPools().GetPools(), err)
		}
		err = eventually(2*time.Minute, time.Second, func() error {
			h, err := historypb.NewHistoryServiceClient(s.gw).GetCapacityHistory(ctx(), &historypb.GetCapacityHistoryRequest{})
			if err == nil && len(h.GetPoints()) == 0 {
				return errors.New("no capacity reading yet")
			}
			return err
		})
		if err != nil {
			t.Errorf("GetCapacityHistory: %v", err)
		}
	})
	t.Run("Vagrant", func(t *testing.T) {
		resp, err := vagrantv1.NewRunnerServiceClient(s.gw).ListRunners(ctx(), &vagrantv1.ListRunnersRequest{})
		if err != nil {
			t.Fatalf("ListRunners: %v", err)
		}
		var online, reserved int
		for _, r := range resp.GetRunners() {
			if r.GetOnline() {
				online++
				if r.GetByIdOnly() {
					reserved++
				}
			}
		}
		if online < 2 || reserved != 1 {
			t.Errorf("ListRunners: %d online, %d of them by-id-only; want the runner's general id and kaas's reserved one", online, reserved)
		}
	})
	t.Run("Clusters", func(t *testing.T) {
		kaas := kaaspb.NewClusterClient(s.gw)
		v, err := kaas.GetVersionInformation(ctx(), &kaaspb.GetVersionMsg{})
		if err != nil || v.GetVersionInformation().GetGitVersion() == "" {
			t.Errorf("GetVersionInformation: %v, %v", v, err)
		}
		if list, err := kaas.GetClusterList(ctx(), &kaaspb.GetClusterListMsg{}); err != nil || !list.GetOk() {
			t.Errorf("GetClusterList: %v, %v", list, err)
		}
	})
	t.Run("Volumes", func(t *testing.T) {
		s.requireService(t, "lvmd-agent")
		free, err := lvmdpb.NewVGServiceClient(s.gw).GetFreeBytes(ctx(), &lvmdpb.GetFreeBytesRequest{})
		if err != nil || free.GetFreeBytes() == 0 {
			t.Errorf("GetFreeBytes: %v, %v; want the volume group's free space", free, err)
		}
		if _, err := jobspb.NewJobServiceClient(s.gw).ListJobs(ctx(), &jobspb.ListJobsRequest{}); err != nil {
			t.Errorf("ListJobs: %v", err)
		}
	})
	t.Run("Backups", func(t *testing.T) {
		resp, err := catalogpb.NewCatalogServiceClient(s.gw).ListServers(ctx(), &catalogpb.ListServersRequest{})
		if err != nil || len(resp.GetServers()) == 0 {
			t.Errorf("ListServers: %v, %v; want the server the archive journey wrote", resp, err)
		}
	})
	t.Run("Admin", func(t *testing.T) {
		resp, err := adminpb.NewAdminServiceClient(s.gw).ListUsers(ctx(), &adminpb.ListUsersRequest{})
		if err != nil {
			t.Fatalf("ListUsers: %v", err)
		}
		for _, u := range resp.GetUsers() {
			if u.GetUsername() == "admin" && u.GetAdmin() {
				return
			}
		}
		t.Errorf("ListUsers = %v; want the first user admin", resp.GetUsers())
	})
}
