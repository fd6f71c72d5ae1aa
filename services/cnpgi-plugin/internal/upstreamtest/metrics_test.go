package upstreamtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/metrics"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestMetrics defines and collects the archive's metrics through the upstream client, after
// real archive calls (and one failed one) through the WAL client.
func TestMetrics(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	c := metrics.NewMetricsClient(p.conn)
	ctx := ctxT(t)
	def := cluster("pg-metrics", map[string]string{"objectStore": "s3"})

	caps, err := c.GetCapabilities(ctx, &metrics.MetricsCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 1 || caps.GetCapabilities()[0].GetRpc().GetType() != metrics.MetricsCapability_RPC_TYPE_METRICS {
		t.Fatalf("metrics capabilities %v, %v", caps, err)
	}
	defs, err := c.Define(ctx, &metrics.DefineMetricsRequest{ClusterDefinition: def})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]metrics.MetricType_Type{}
	for _, m := range defs.GetMetrics() {
		// The instance manager dereferences value_type without a nil check.
		if m.GetValueType() == nil || m.GetValueType().GetType() == metrics.MetricType_TYPE_UNSPECIFIED || m.GetHelp() == "" ||
			strings.Join(m.GetVariableLabels(), ",") != "object_store,server_name" {
			t.Fatalf("metric definition %v", m)
		}
		types[m.GetFqName()] = m.GetValueType().GetType()
	}
	for name, typ := range map[string]metrics.MetricType_Type{
		"plinth_cnpgi_first_recoverability_point": metrics.MetricType_TYPE_GAUGE, "plinth_cnpgi_last_successful_backup_timestamp": metrics.MetricType_TYPE_GAUGE,
		"plinth_cnpgi_last_failed_backup_timestamp": metrics.MetricType_TYPE_GAUGE, "plinth_cnpgi_archived_segments": metrics.MetricType_TYPE_GAUGE,
		"plinth_cnpgi_archived_bytes": metrics.MetricType_TYPE_GAUGE, "plinth_cnpgi_archive_failures_total": metrics.MetricType_TYPE_COUNTER,
		"plinth_cnpgi_archive_lag_seconds": metrics.MetricType_TYPE_GAUGE,
	} {
		if types[name] != typ {
			t.Errorf("%s: %v, want %v", name, types[name], typ)
		}
	}

	pgwal := p.owner.mkdir(t, filepath.Join(p.home, "pgdata-metrics", "pg_wal"))
	w := wal.NewWALClient(p.conn)
	for _, seg := range []string{"000000010000000000000001", "000000010000000000000002"} {
		path, _ := p.segment(t, pgwal, seg, 99)
		if _, err := w.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path}); err != nil {
			t.Fatal(err)
		}
	}
	path, _ := p.segment(t, pgwal, "000000010000000000000001", 99) // other bytes under an archived name
	if _, err := w.Archive(ctx, &wal.WALArchiveRequest{ClusterDefinition: def, SourceFileName: path}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("conflicting archive: %v", err)
	}

	res, err := c.Collect(ctx, &metrics.CollectMetricsRequest{ClusterDefinition: def})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range res.GetMetrics() {
		if strings.Join(m.GetVariableLabels(), ",") != "s3,pg-metrics" {
			t.Fatalf("labels %v", m.GetVariableLabels())
		}
		got[m.GetFqName()] = m.GetValue()
	}
	if len(got) != len(defs.GetMetrics()) {
		t.Fatalf("collected %d metrics, defined %d", len(got), len(defs.GetMetrics()))
	}
	if got["plinth_cnpgi_archived_segments"] != 2 || got["plinth_cnpgi_archived_bytes"] <= 0 || got["plinth_cnpgi_archive_failures_total"] != 1 ||
		got["plinth_cnpgi_last_archived_timestamp"] <= 0 || got["plinth_cnpgi_archive_lag_seconds"] < 0 || got["plinth_cnpgi_archive_lag_seconds"] > 60 ||
		got["plinth_cnpgi_first_recoverability_point"] != 0 {
		t.Fatalf("collected %v", got)
	}
	if res, err := c.Collect(ctx, &metrics.CollectMetricsRequest{ClusterDefinition: []byte(`{"metadata":{"name":"x"},"spec":{}}`)}); err != nil || len(res.GetMetrics()) != 0 {
		t.Fatalf("a cluster without the plugin: %v, %v", res.GetMetrics(), err)
	}
	if _, err := c.Collect(ctx, &metrics.CollectMetricsRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no cluster definition: %v", err)
	}
	if _, err := c.Define(ctx, &metrics.DefineMetricsRequest{ClusterDefinition: []byte("nope")}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a broken cluster definition: %v", err)
	}
}
