package app_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	rstats "github.com/plinth-dev/plinth/libs/api/resources/stats"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/services/stats/internal/cephtest"
)

// stats waits for GetClusterStats to answer and cond to hold.
func stats(t *testing.T, c statspb.StatsServiceClient, what string, cond func(*rstats.ClusterStats) bool) *rstats.ClusterStats {
	t.Helper()
	var last *rstats.ClusterStats
	eventually(t, time.Minute, what, func() (bool, string) {
		resp, err := c.GetClusterStats(authed(t), &statspb.GetClusterStatsRequest{})
		if err != nil {
			return false, err.Error()
		}
		last = resp.GetStats()
		return cond(last), last.String()
	})
	return last
}

func radarOf(t *testing.T, c statspb.StatsServiceClient) *rstats.ClusterRadar {
	t.Helper()
	resp, err := c.GetClusterRadar(authed(t), &statspb.GetClusterRadarRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetRadar()
}

// TestEveryRPCFromARealCephCluster runs stats against a real single-node Ceph (dashboard,
// prometheus module, memstore OSD, radosgw) and checks every RPC against the cluster: the fresh
// cluster's values, usage growing after `rados put`, an RBD image counted as a volume, and a
// WARN after `ceph osd set noout` in the status, the crashes, the radar and its stability; and
// plinth.stats.v1.ClusterService's detail (pools, OSD, the noout check, a posted crash). The
// same cluster is then read through the prometheus module.
func TestEveryRPCFromARealCephCluster(t *testing.T) {
	t.Parallel()
	c := cephtest.Start(t, cephtest.Options{Dashboard: true, RGW: true})
	e := newEnv(t)
	e.secrets = append(e.secrets, c.DashboardPassword)
	// As make up configures it: the password in the cluster's 0600 file, never in the environment.
	in := e.start(t, e.config(t, "PLINTH_STATS_CEPH_URL="+c.DashboardURL, "PLINTH_STATS_CEPH_USER="+c.DashboardUser,
		"PLINTH_STATS_CEPH_PASSWORD_FILE="+c.Local().DashboardPasswordFile(), "PLINTH_STATS_INVENTORY=false"))
	cl := in.client
	want := c.Status(t) // the oracle: what the mon says, independently of the mgr stats reads

	// radosgw registers with the mgr a moment after the cluster is up, and the dashboard
	// learns its host and zone after that: wait for a report that has them (a collector that
	// never reports them fails here with the last report).
	st := stats(t, cl, "a report with the gateway's host and zone", func(s *rstats.ClusterStats) bool {
		r := s.GetServices().GetRgw()
		return s.GetId() != "" && r.GetHostCount() > 0 && r.GetZoneCount() > 0
	})
	svc, data := st.GetServices(), st.GetData()
	if st.GetId() != c.FSID || st.GetId() != want.FSID || st.GetStatus() != "HEALTH_OK" || len(st.GetCrashes()) != 0 {
		t.Errorf("id %q status %q crashes %v; want %s HEALTH_OK", st.GetId(), st.GetStatus(), st.GetCrashes(), c.FSID)
	}
	if m := svc.GetMon(); m.GetDaemonCount() != 1 || m.GetQuorum() != strings.Join(want.QuorumNames, ",") || m.GetCreatedAt() == nil {
		t.Errorf("mon %v; quorum must be %v", m, want.QuorumNames)
	}
	if svc.GetMgr().GetActive() != "x" || svc.GetMgr().GetUpdatedAt() == nil {
		t.Errorf("mgr %v", svc.GetMgr())
	}
	if o := svc.GetOsd(); o.GetOsdCount() != 1 || o.GetOsdUp() != 1 || o.GetOsdIn() != 1 || o.GetOsdUpUpdatedAt() == nil {
		t.Errorf("osd %v", o)
	}
	if r := svc.GetRgw(); r.GetActiveDaemon() != 1 || r.GetHostCount() != 1 || r.GetZoneCount() != 1 {
		t.Errorf("rgw %v; want the real gateway, host and zone", r)
	}
	if data.GetPools().GetPools() != int32(want.PGMap.Pools) || data.GetPools().GetPgs().GetActiveClean() != int32(want.PGMap.PGs) ||
		data.GetUsage().GetTotal() != want.PGMap.Total || data.GetUsage().GetUsed() <= 0 || data.GetVolumes() != 0 {
		t.Errorf("data %v; `ceph status` says %+v", data, want.PGMap)
	}
	checkDetailOfAHealthyCluster(t, c, in.conn)
	if !strings.HasSuffix(st.GetIops().GetClientRead(), "/s rd") || !strings.HasSuffix(st.GetIops().GetClientWriteOps(), "ops/s wr") {
		t.Errorf("iops %v", st.GetIops())
	}
	r := radarOf(t, cl)
	if r.GetClusterHealth() != 100 || r.GetNodesHealth() != 0 || r.GetCapacityAvailable() < 90 || r.GetStability() != 100 || r.GetReliability() != 0 {
		t.Errorf("radar %v; want 100, 0 (no node source), >90, 100, 0 (one copy, one mon)", r)
	}
	nodes, err := cl.GetClusterNodes(authed(t), &statspb.GetClusterNodesRequest{})
	if err != nil || len(nodes.GetNodes()) != 0 {
		t.Errorf("nodes without Kubernetes or inventory: %v %v", nodes, err)
	}
	res, err := cl.GetClusterResources(authed(t), &statspb.GetClusterResourcesRequest{})
	if err != nil || len(res.GetResources())+len(res.GetDeployments()) != 0 {
		t.Errorf("resources without Kubernetes: %v %v", res, err)
	}
	if _, err := cl.GetKoorCluster(authed(t), &statspb.GetKoorClusterRequest{}); status.Code(err) != codes.NotFound {
		t.Errorf("KoorCluster without Kubernetes: %v", err)
	}

	// Data: a pool with 4 MiB of objects, an RBD pool with one image.
	c.Ceph(t, "osd", "pool", "create", "data", "8")
	c.Ceph(t, "osd", "pool", "application", "enable", "data", "rados")
	c.Ceph(t, "osd", "pool", "create", "rbd", "8")
	c.Run(t, "rbd", "pool", "init", "rbd")
	c.Run(t, "rbd", "create", "rbd/vol1", "--size", "8M")
	c.WaitHealthy(t)
	blob := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(blob, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		c.Run(t, "rados", "-p", "data", "put", fmt.Sprintf("object-%d", i), blob)
	}
	grown := stats(t, cl, "usage to grow by the 4 MiB written", func(s *rstats.ClusterStats) bool {
		d := s.GetData()
		return d.GetUsage().GetUsed() >= data.GetUsage().GetUsed()+4<<20 && d.GetObjects().GetObjectCount() >= data.GetObjects().GetObjectCount()+4 &&
			d.GetVolumes() == 1 && d.GetPools().GetPools() == data.GetPools().GetPools()+2
	})
	t.Logf("usage %d → %d bytes, objects %d → %d (%s)", data.GetUsage().GetUsed(), grown.GetData().GetUsage().GetUsed(),
		data.GetObjects().GetObjectCount(), grown.GetData().GetObjects().GetObjectCount(), grown.GetData().GetObjects().GetSize())
	// The capacity history has Ceph's figures, from before and after the writes.
	h := history(t, statsv1.NewHistoryServiceClient(in.conn), &statsv1.GetCapacityHistoryRequest{}, "the growth in the capacity history",
		func(r *statsv1.GetCapacityHistoryResponse) bool {
			n := len(r.GetPoints())
			return n >= 2 && r.GetPoints()[n-1].GetUsedBytes() >= grown.GetData().GetUsage().GetUsed()
		})
	inOrder(t, h)
	if p0, pn := h.GetPoints()[0], h.GetPoints()[len(h.GetPoints())-1]; p0.GetUsedBytes() > grown.GetData().GetUsage().GetUsed()-2<<20 || p0.GetTotalBytes() != want.PGMap.Total ||
		pn.GetTotalBytes() != want.PGMap.Total || pn.GetAvailableBytes() <= 0 || pn.GetAvailableBytes() >= want.PGMap.Total {
		t.Errorf("capacity history %s; want Ceph's total %d, from the first report's usage to the grown one", showPoints(h), want.PGMap.Total)
	}

	// A warning.
	c.Ceph(t, "osd", "set", "noout")
	stats(t, cl, "HEALTH_WARN with the noout check", func(s *rstats.ClusterStats) bool {
		return s.GetStatus() == "HEALTH_WARN" && len(s.GetCrashes()) == 1 && s.GetCrashes()[0].GetDescription() == "noout flag(s) set"
	})
	checkNooutReason(t, in.conn)
	eventually(t, 10*time.Second, "the radar to show the warning", func() (bool, string) {
		r := radarOf(t, cl)
		return r.GetClusterHealth() == 50 && r.GetStability() <= 85, r.String()
	})
	if !strings.Contains(readyz(t, in.admin), "source ceph: ok") {
		t.Errorf("/readyz does not show the source: %s", readyz(t, in.admin))
	}

	// The same cluster through the prometheus module.
	promInstance := e.start(t, e.config(t, "PLINTH_STATS_CEPH_URL="+c.PrometheusURL, "PLINTH_STATS_INVENTORY=false"))
	prom := promInstance.client
	ps := stats(t, prom, "the prometheus module's report", func(s *rstats.ClusterStats) bool { return s.GetStatus() != "" })
	if ps.GetStatus() != "HEALTH_WARN" || len(ps.GetCrashes()) != 1 || ps.GetCrashes()[0].GetDescription() != "OSDMAP_FLAGS" ||
		ps.GetServices().GetOsd().GetOsdUp() != 1 || ps.GetServices().GetMon().GetQuorum() != "a" ||
		ps.GetData().GetPools().GetPools() != grown.GetData().GetPools().GetPools() {
		t.Errorf("prometheus: %v", ps)
	}

	checkPrometheusDetail(t, promInstance.conn)
	checkCrashReported(t, c, in.conn)

	// Recovered: healthy again, but the changes still weigh on stability.
	c.Ceph(t, "osd", "unset", "noout")
	stats(t, cl, "HEALTH_OK again", func(s *rstats.ClusterStats) bool { return s.GetStatus() == "HEALTH_OK" })
	eventually(t, 10*time.Second, "the radar after recovery", func() (bool, string) {
		r := radarOf(t, cl)
		return r.GetClusterHealth() == 100 && r.GetStability() < 100, r.String()
	})
}

func readyz(t *testing.T, admin string) string {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
