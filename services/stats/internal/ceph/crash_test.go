package ceph

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// The crash module's RECENT_CRASH check as the mon reports it (details as {"message": …}),
// beside a check whose details are plain strings: each daemon once, with its count and latest
// crash, the latest first; "and N more" and odd lines are not crashes.
func TestChecksKeepTheirDetailsAndCrashesAreReadFromThem(t *testing.T) {
	body := `{"health": {"status": "HEALTH_WARN", "checks": [
	  {"type": "RECENT_CRASH", "severity": "HEALTH_WARN", "summary": {"message": "34 daemons have recently crashed", "count": 34},
	   "detail": [{"message": "osd.0 crashed on host node-a at 2026-11-24T02:17:18.196594Z"},
	              {"message": "mgr.x crashed on host node-b at 2026-11-25 08:00:00.000000Z"},
	              {"message": "osd.0 crashed on host node-c at 2026-11-26T09:30:00.5Z"},
	              {"message": "osd.3 crashed on host node-a at yesterday"},
	              {"message": "and 30 more"}]},
	  {"type": "OSD_DOWN", "severity": "HEALTH_WARN", "summary": {"message": "1 osds down", "count": 1},
	   "detail": ["osd.1 (root=default,host=node-b) is down", ""]}]}}`
	c, err := DecodeHealthFull([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.Checks[0].Count != 34 || len(c.Checks[0].Details) != 5 || c.Checks[0].Details[4] != "and 30 more" {
		t.Errorf("RECENT_CRASH: %+v", c.Checks[0])
	}
	if !reflect.DeepEqual(c.Checks[1].Details, []string{"osd.1 (root=default,host=node-b) is down"}) || c.Checks[1].Count != 1 {
		t.Errorf("OSD_DOWN: %+v", c.Checks[1])
	}
	want := []cluster.Crash{
		{Daemon: "osd.0", Host: "node-c", Count: 2, Last: time.Date(2026, 11, 26, 9, 30, 0, 500000000, time.UTC)},
		{Daemon: "mgr.x", Host: "node-b", Count: 1, Last: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)},
		{Daemon: "osd.3", Host: "node-a", Count: 1},
	}
	if !reflect.DeepEqual(c.Crashes, want) {
		t.Errorf("crashes\n%+v\nwant\n%+v", c.Crashes, want)
	}
}

func TestCheckDetailsAreBounded(t *testing.T) {
	lines := make([]string, 50)
	for i := range lines {
		lines[i] = `"line"`
	}
	body := `{"health": {"status": "HEALTH_WARN", "checks": [{"type": "X", "detail": [` + strings.Join(lines, ",") + `]}]}}`
	c, err := DecodeHealthFull([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Checks[0].Details); n != cluster.MaxCheckDetails {
		t.Errorf("%d detail lines kept, want %d", n, cluster.MaxCheckDetails)
	}
}

// The busy report's pools carry df's per-pool figures, matched by pool id.
func TestPoolsCarryTheirStoredBytesAndObjects(t *testing.T) {
	c, err := DecodeHealthFull(readTestdata(t, "health-full-rgw-rbd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stored, objects int64
	for _, p := range c.Pools {
		stored += p.StoredBytes
		objects += p.Objects
	}
	if stored != c.StoredBytes || objects == 0 {
		t.Errorf("pools' stored %d (report %d), objects %d: %+v", stored, c.StoredBytes, objects, c.Pools)
	}
}
