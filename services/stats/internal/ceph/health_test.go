package ceph

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The testdata reports were captured from Ceph 16.2.15 (Debian 12) started by cephtest: a fresh
// cluster, the same after `ceph osd set noout`, and after a radosgw, an RBD pool and 20 MB of
// objects.
func TestDecodeHealthFullOfARealCluster(t *testing.T) {
	c, err := DecodeHealthFull(readTestdata(t, "health-full-ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := &cluster.Ceph{
		Origin: cluster.OriginDashboard,
		FSID:   "2ef87484-224a-4e37-b9d2-a2a925636b4e", Health: "HEALTH_OK", Checks: []cluster.Check{}, Crashes: []cluster.Crash{},
		Mons: []string{"a"}, Quorum: []string{"a"},
		MonCreated:  time.Date(2026, 11, 24, 2, 17, 2, 899198000, time.UTC),
		MonModified: time.Date(2026, 11, 24, 2, 17, 2, 899198000, time.UTC),
		MgrActive:   "x", MgrChanged: time.Date(2026, 11, 24, 2, 17, 41, 968558000, time.UTC),
		OSDs: 1, OSDsUp: 1, OSDsIn: 1, OSDList: []cluster.OSD{{ID: 0, Up: true, In: true}},
		OSDUpChanged: time.Date(2026, 11, 24, 2, 17, 10, 901712000, time.UTC),
		OSDInChanged: time.Date(2026, 11, 24, 2, 17, 7, 420100000, time.UTC),
		Pools:        []cluster.Pool{{Name: "device_health_metrics", Size: 1, MinSize: 1, PGs: 1, ActiveClean: 1}},
		Usage:        cluster.Usage{Used: 19019, Available: 1073722805, Total: 1073741824},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", c, want)
	}

	warn, err := DecodeHealthFull(readTestdata(t, "health-full-noout.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantCheck := cluster.Check{Name: "OSDMAP_FLAGS", Severity: "HEALTH_WARN", Message: "noout flag(s) set", Count: 5}
	if warn.Health != "HEALTH_WARN" || len(warn.Checks) != 1 || !reflect.DeepEqual(warn.Checks[0], wantCheck) {
		t.Fatalf("noout: %s %+v", warn.Health, warn.Checks)
	}

	busy, err := DecodeHealthFull(readTestdata(t, "health-full-rgw-rbd.json"))
	if err != nil {
		t.Fatal(err)
	}
	if busy.RGWDaemons != 1 || len(busy.Pools) != 6 || busy.ActiveCleanPGs() != 41 || busy.Objects != 236 ||
		busy.StoredBytes != 20977048 || busy.IO.WriteBytesPerSec != 1746643 {
		t.Fatalf("busy cluster: rgw %d pools %d active+clean %d objects %d stored %d io %+v",
			busy.RGWDaemons, len(busy.Pools), busy.ActiveCleanPGs(), busy.Objects, busy.StoredBytes, busy.IO)
	}
}

// Shapes other releases emit: checks as a map, the OSD map summarised (and nested, before
// Octopus), no I/O rates on an idle cluster, numbers as strings, old time formats, two
// active MDS ranks as a map.
func TestDecodeHealthFullOtherShapes(t *testing.T) {
	body := `{
	  "health": {"status": "HEALTH_WARN", "checks": {
	    "MDS_SLOW": {"severity": "HEALTH_WARN", "summary": {"message": "1 MDS slow"}, "muted": true},
	    "FS_DEGRADED": {"severity": "HEALTH_ERR", "summary": {"message": "fs degraded"}}}},
	  "mon_status": {"quorum_names": ["b", "c"], "monmap": {"fsid": "f", "created": "2019-07-09 12:34:56.123456",
	    "modified": 1562675696, "mons": [{"rank": "0", "name": "a"}, {"rank": 1, "name": "b"}, {"rank": 2, "name": "c"}]}},
	  "mgr_map": {"active_name": "y", "standbys": [{"name": "z"}], "active_change": "garbage"},
	  "fs_map": {"standbys": [{"name": "mds.d"}], "filesystems": [
	    {"mdsmap": {"up": {"mds_0": 4123, "mds_1": 4200}, "info": {"gid_1": {"state": "up:standby-replay"}}}},
	    {"mdsmap": {"up": [{"rank": 0}]}}]},
	  "osd_map": {"osdmap": {"num_osds": 3, "num_up_osds": 2, "num_in_osds": "3", "osd_up_since": 1562675696}},
	  "pools": [{"pool_name": "rbd", "size": 3, "min_size": 2, "pg_num": 32,
	    "pg_status": {"active+clean": 30, "active+clean+scrubbing+deep": 1, "active+undersized": 1}}],
	  "df": {"stats": {"total_bytes": "1000", "total_avail_bytes": 600, "total_used_bytes": 400.0}},
	  "client_perf": {}
	}`
	c, err := DecodeHealthFull([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Checks) != 2 || c.Checks[0].Name != "FS_DEGRADED" || !c.Checks[1].Muted || c.Checks[1].Message != "1 MDS slow" {
		t.Errorf("checks as a map: %+v", c.Checks)
	}
	if !reflect.DeepEqual(c.Mons, []string{"a", "b", "c"}) || !reflect.DeepEqual(c.Quorum, []string{"b", "c"}) {
		t.Errorf("mons %v quorum %v", c.Mons, c.Quorum)
	}
	if c.MonCreated != time.Date(2019, 7, 9, 12, 34, 56, 123456000, time.UTC) || c.MonModified != time.Unix(1562675696, 0).UTC() || !c.MgrChanged.IsZero() {
		t.Errorf("times: %v %v %v", c.MonCreated, c.MonModified, c.MgrChanged)
	}
	if c.Filesystems != 2 || c.MDSUp != 3 || c.MDSStandby != 2 {
		t.Errorf("mds: fs %d up %d standby %d, want 2, 3, 2", c.Filesystems, c.MDSUp, c.MDSStandby)
	}
	if c.OSDs != 3 || c.OSDsUp != 2 || c.OSDsIn != 3 || c.OSDUpChanged != time.Unix(1562675696, 0).UTC() {
		t.Errorf("osds %d/%d/%d since %v", c.OSDs, c.OSDsUp, c.OSDsIn, c.OSDUpChanged)
	}
	if c.ActiveCleanPGs() != 31 || c.Usage != (cluster.Usage{Used: 400, Available: 600, Total: 1000}) || c.IO != (cluster.IO{}) {
		t.Errorf("pgs %d usage %+v io %+v", c.ActiveCleanPGs(), c.Usage, c.IO)
	}
}

func TestDecodeHealthFullRefusesWhatIsNotAReport(t *testing.T) {
	for _, body := range []string{"", "<html>login</html>", `{"detail": "Not Authorized"}`, `[]`, `{"health": {"status": 3}}`} {
		if _, err := DecodeHealthFull([]byte(body)); err == nil {
			t.Errorf("%q decoded as a report", body)
		}
	}
}

func TestTextIsBoundedAndValid(t *testing.T) {
	long := strings.Repeat("é", 4000)
	body := `{"health": {"status": "HEALTH_WARN", "checks": [{"type": "X\u0000Y", "summary": {"message": "` + long + `"}}]}}`
	c, err := DecodeHealthFull([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Checks[0].Message; len(m) > maxMessage || !strings.Contains(m, "truncated") {
		t.Errorf("a %d-byte message kept %d bytes", len(long), len(m))
	}
	if c.Checks[0].Name != "XY" {
		t.Errorf("NUL kept: %q", c.Checks[0].Name)
	}
}

func TestDecodeGateways(t *testing.T) {
	body := `[{"id": "x", "server_hostname": "vm", "zone_name": "default"},
	  {"id": "y", "server_hostname": "vm2", "zone_name": "default"}, {"id": "z", "server_hostname": "vm2", "zone_name": "eu"}]`
	hosts, zones, err := DecodeGateways([]byte(body))
	if err != nil || hosts != 2 || zones != 2 {
		t.Fatalf("hosts %d zones %d err %v", hosts, zones, err)
	}
}
