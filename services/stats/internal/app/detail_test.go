package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	statsv1 "github.com/plinth-dev/plinth/libs/api/plinth/stats/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cephtest"
)

// detail waits for plinth.stats.v1.ClusterService/GetClusterDetail to answer and cond to hold.
func detail(t *testing.T, conn *grpc.ClientConn, what string, cond func(*statsv1.GetClusterDetailResponse) bool) *statsv1.GetClusterDetailResponse {
	t.Helper()
	var last *statsv1.GetClusterDetailResponse
	eventually(t, time.Minute, what, func() (bool, string) {
		resp, err := statsv1.NewClusterServiceClient(conn).GetClusterDetail(authed(t), &statsv1.GetClusterDetailRequest{})
		if err != nil {
			return false, err.Error()
		}
		last = resp
		return cond(resp), resp.String()
	})
	return last
}

// checkDetailOfAHealthyCluster compares the detail with what the cluster itself says: its
// fsid, its pools (`ceph osd pool ls`) and its one OSD, up and in; no check, no crash.
func checkDetailOfAHealthyCluster(t *testing.T, c *cephtest.Cluster, conn *grpc.ClientConn) {
	t.Helper()
	pools := strings.Fields(c.Ceph(t, "osd", "pool", "ls"))
	slices.Sort(pools)
	d := detail(t, conn, "the healthy cluster's detail with its pools, every PG active+clean", func(d *statsv1.GetClusterDetailResponse) bool {
		return len(d.GetPools()) == len(pools) && !slices.ContainsFunc(d.GetPools(), func(p *statsv1.Pool) bool { return p.GetActiveCleanPgs() != p.GetPgs() })
	})
	var names []string
	for _, p := range d.GetPools() {
		names = append(names, p.GetName())
		if p.GetSize() != 1 || p.GetMinSize() != 1 || p.GetPgs() == 0 || p.GetActiveCleanPgs() != p.GetPgs() {
			t.Errorf("pool %v; want one copy, every PG active+clean", p)
		}
	}
	slices.Sort(names)
	if d.GetSource() != statsv1.ClusterSource_CLUSTER_SOURCE_CEPH_DASHBOARD || d.GetFsid() != c.FSID || d.GetHealth() != "HEALTH_OK" ||
		len(d.GetChecks()) != 0 || len(d.GetCrashes()) != 0 || !slices.Equal(names, pools) || d.GetReadTime() == nil {
		t.Errorf("detail %v; want the dashboard's report of %s, HEALTH_OK, pools %v", d, c.FSID, pools)
	}
	if o := d.GetOsds(); len(o) != 1 || o[0].GetId() != 0 || !o[0].GetUp() || !o[0].GetIn() {
		t.Errorf("osds %v; want osd.0 up and in", o)
	}
}

// checkNooutReason: HEALTH_WARN comes with its reason, Ceph's OSDMAP_FLAGS check.
func checkNooutReason(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	detail(t, conn, "the noout check as the warning's reason", func(d *statsv1.GetClusterDetailResponse) bool {
		ch := d.GetChecks()
		return d.GetHealth() == "HEALTH_WARN" && len(ch) == 1 && ch[0].GetCode() == "OSDMAP_FLAGS" &&
			ch[0].GetSeverity() == "HEALTH_WARN" && ch[0].GetSummary() == "noout flag(s) set" && !ch[0].GetMuted()
	})
}

// checkCrashReported posts a crash report for osd.0 as the crash collector would (`ceph crash
// post`), waits for it in the detail — the RECENT_CRASH check with its detail line, and the
// crash by daemon, host and time — then archives it, which clears the check.
func checkCrashReported(t *testing.T, c *cephtest.Cluster, conn *grpc.ClientConn) {
	t.Helper()
	at := time.Now().UTC().Truncate(time.Microsecond)
	report, _ := json.Marshal(map[string]string{
		"crash_id":         at.Format("2006-01-02T15:04:05.000000Z") + "_4e1f5a7c-plinth-test",
		"timestamp":        at.Format("2006-01-02T15:04:05.000000Z"),
		"entity_name":      "osd.0",
		"utsname_hostname": "plinth-test-host",
	})
	file := filepath.Join(t.TempDir(), "crash.json")
	if err := os.WriteFile(file, report, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Ceph(t, "crash", "post", "-i", file)
	d := detail(t, conn, "the posted crash", func(d *statsv1.GetClusterDetailResponse) bool {
		return len(d.GetCrashes()) == 1 && slices.ContainsFunc(d.GetChecks(), func(ch *statsv1.HealthCheck) bool {
			return ch.GetCode() == "RECENT_CRASH" && ch.GetCount() == 1 && len(ch.GetDetails()) == 1
		})
	})
	cr := d.GetCrashes()[0]
	if cr.GetDaemon() != "osd.0" || cr.GetHost() != "plinth-test-host" || cr.GetCount() != 1 || !cr.GetLastTime().AsTime().Equal(at) {
		t.Errorf("crash %v; want osd.0 on plinth-test-host once at %v", cr, at)
	}
	c.Ceph(t, "crash", "archive-all")
	detail(t, conn, "the archived crash gone", func(d *statsv1.GetClusterDetailResponse) bool { return len(d.GetCrashes()) == 0 })
}

// checkPrometheusDetail: the prometheus module names the source and lists the OSD; its checks
// have no summary (the module exports only their names).
func checkPrometheusDetail(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	d := detail(t, conn, "the prometheus module's detail", func(d *statsv1.GetClusterDetailResponse) bool { return d.GetHealth() != "" })
	if d.GetSource() != statsv1.ClusterSource_CLUSTER_SOURCE_CEPH_PROMETHEUS || len(d.GetOsds()) != 1 || !d.GetOsds()[0].GetUp() ||
		len(d.GetChecks()) != 1 || d.GetChecks()[0].GetCode() != "OSDMAP_FLAGS" || len(d.GetPools()) == 0 {
		t.Errorf("prometheus detail %v", d)
	}
}
