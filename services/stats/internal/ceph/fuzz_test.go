package ceph

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// checkReport fails t when a decoded report holds text an API answer cannot carry (invalid
// UTF-8, NUL, unbounded) or impossible counts.
func checkReport(t *testing.T, c *cluster.Ceph) {
	t.Helper()
	texts := append([]string{c.FSID, c.Health, c.MgrActive}, append(c.Mons, append(c.Quorum, c.MgrStandbys...)...)...)
	for _, ch := range c.Checks {
		texts = append(texts, ch.Name, ch.Severity, ch.Message)
	}
	for _, p := range c.Pools {
		texts = append(texts, p.Name)
		if p.Size < 0 || p.MinSize < 0 || p.PGs < 0 || p.ActiveClean < 0 {
			t.Fatalf("negative pool figures %+v", p)
		}
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > maxMessage {
			t.Fatalf("unsafe text %q", s)
		}
	}
	if c.OSDs < 0 || c.OSDsUp < 0 || c.OSDsIn < 0 || c.Objects < 0 || c.StoredBytes < 0 || c.Usage.Used < 0 ||
		c.Usage.Available < 0 || c.Usage.Total < 0 || c.MDSUp < 0 || c.MDSStandby < 0 || c.RGWDaemons < 0 {
		t.Fatalf("negative counts %+v", c)
	}
}

// FuzzDecodeHealthFull feeds the dashboard decoder whatever a hostile or broken mgr could
// send. Seeds: two real reports cut to the fields stats reads (the fuzzer crawls with 100 KB
// inputs) and the other releases' shapes.
func FuzzDecodeHealthFull(f *testing.F) {
	for _, name := range []string{"seed-ok.json", "seed-busy.json"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(`{"health":{"status":"HEALTH_WARN","checks":{"A":{"severity":"HEALTH_WARN","summary":{"message":"m"}}}},` +
		`"osd_map":{"osdmap":{"num_osds":3,"num_up_osds":"2"}},"fs_map":{"filesystems":[{"mdsmap":{"up":{"mds_0":1}}}]},` +
		`"mon_status":{"quorum":[0,7],"monmap":{"mons":[{"rank":0,"name":"a"}],"created":"2019-07-09 12:34:56"}},"client_perf":{}}`))
	f.Add([]byte(`{"health":{"status":"HEALTH_OK","checks":null},"pools":[{"size":-1,"pg_status":{"active+clean":1e300}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeHealthFull(data)
		if err != nil {
			return
		}
		checkReport(t, c)
	})
}

// FuzzParseMetrics feeds the Prometheus text parser and the mapping to a report.
func FuzzParseMetrics(f *testing.F) {
	for _, name := range []string{"seed-metrics.txt"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte("ceph_health_status 2\nceph_health_detail{name=\"X\\\"\",severity=\"HEALTH_ERR\"} 1\nceph_pool_metadata{pool_id=\"1\",description=\"ec:4+2\"} 1\n"))
	f.Add([]byte("ceph_health_status NaN\nceph_osd_up{ceph_daemon=\"osd.0\"} +Inf\nceph_cluster_total_bytes -1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := ParseMetrics(data)
		if err != nil {
			return
		}
		c, _, err := FromMetrics(ms)
		if err != nil {
			return
		}
		checkReport(t, c)
	})
}

// FuzzDecodeGateways feeds the radosgw daemon list decoder.
func FuzzDecodeGateways(f *testing.F) {
	f.Add([]byte(`[{"id":"x","server_hostname":"vm","zone_name":"default"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		hosts, zones, err := DecodeGateways(data)
		if err == nil && (hosts < 0 || zones < 0) {
			t.Fatalf("hosts %d zones %d", hosts, zones)
		}
	})
}
