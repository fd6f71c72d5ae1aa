package ceph

import (
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

func TestParseMetrics(t *testing.T) {
	body := "# HELP x y\n# TYPE x gauge\n\nceph_health_status 1.0\n" +
		`ceph_mon_metadata{ceph_daemon="mon.a",hostname="vm",rank="0",ceph_version="ceph \"16\"\\x\n"} 1.0 1700000000000` + "\n" +
		`ceph_pg_total{pool_id="1",} 8` + "\n"
	ms, err := ParseMetrics([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{
		{Name: "ceph_health_status", Value: 1},
		{Name: "ceph_mon_metadata", Labels: map[string]string{"ceph_daemon": "mon.a", "hostname": "vm", "rank": "0", "ceph_version": "ceph \"16\"\\x\n"}, Value: 1},
		{Name: "ceph_pg_total", Labels: map[string]string{"pool_id": "1"}, Value: 8},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("parsed %+v", ms)
	}
	for _, bad := range []string{"<html>", `x{a="b} 1`, `x{a=b} 1`, `x 1 2 3`, `x{9a="b"} 1`, `x{a="b\q"} 1`, `1x 2`} {
		if _, err := ParseMetrics([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestFromMetricsOfARealCluster(t *testing.T) {
	ms, err := ParseMetrics(readTestdata(t, "metrics-rgw-noout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, counters, err := FromMetrics(ms)
	if err != nil {
		t.Fatal(err)
	}
	if c.Health != "HEALTH_WARN" || len(c.Checks) != 1 || c.Checks[0].Name != "OSDMAP_FLAGS" || c.Checks[0].Severity != "HEALTH_WARN" {
		t.Errorf("health %s checks %+v", c.Health, c.Checks)
	}
	if !reflect.DeepEqual(c.Mons, []string{"a"}) || !reflect.DeepEqual(c.Quorum, []string{"a"}) || c.MgrActive != "x" {
		t.Errorf("mons %v quorum %v mgr %q", c.Mons, c.Quorum, c.MgrActive)
	}
	if c.OSDs != 1 || c.OSDsUp != 1 || c.OSDsIn != 1 || len(c.Pools) != 6 || c.ActiveCleanPGs() != 41 {
		t.Errorf("osds %d/%d/%d pools %d active+clean %d", c.OSDs, c.OSDsUp, c.OSDsIn, len(c.Pools), c.ActiveCleanPGs())
	}
	if c.Pools[0].Size != 1 || c.Usage.Total != 1073741824 || c.Usage.Used == 0 || c.Objects != 236 {
		t.Errorf("pool %+v usage %+v objects %d", c.Pools[0], c.Usage, c.Objects)
	}
	var objects int64
	for _, p := range c.Pools {
		objects += p.Objects
	}
	if objects != c.Objects || c.Origin != cluster.OriginPrometheus || !reflect.DeepEqual(c.OSDList, []cluster.OSD{{ID: 0, Up: true, In: true}}) {
		t.Errorf("pools' objects %d (report %d), origin %v, osds %+v", objects, c.Objects, c.Origin, c.OSDList)
	}
	if c.RGWDaemons != 1 || c.RGWHosts != 1 || c.RGWZones != 1 {
		t.Errorf("rgw %d hosts %d zones %d", c.RGWDaemons, c.RGWHosts, c.RGWZones)
	}
	if counters.WriteBytes == 0 {
		t.Errorf("write counters %+v after 20 MB of writes", counters)
	}
	if _, _, err := FromMetrics([]Metric{{Name: "go_goroutines", Value: 8}}); err == nil {
		t.Error("metrics without ceph_health_status were taken for Ceph's")
	}
}

func TestPoolSize(t *testing.T) {
	for desc, want := range map[string]int{"replica:3": 3, "ec:4+2": 6, "replica:x": 0, "": 0, "ec:-1+2": 2} {
		if got := poolSize(desc); got != want {
			t.Errorf("%q: %d, want %d", desc, got, want)
		}
	}
}
