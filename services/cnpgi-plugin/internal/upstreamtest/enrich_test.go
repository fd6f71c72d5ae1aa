package upstreamtest

import (
	"maps"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/postgres"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestEnrichConfiguration adds the archiving settings a configuration lacks, through the
// upstream Postgres client, as the instance manager calls it while writing postgresql.conf.
func TestEnrichConfiguration(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	c := postgres.NewPostgresClient(p.conn)
	ctx := ctxT(t)
	caps, err := c.GetCapabilities(ctx, &postgres.PostgresCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 1 || caps.GetCapabilities()[0].GetRpc().GetType() != postgres.PostgresCapability_RPC_TYPE_ENRICH_CONFIGURATION {
		t.Fatalf("postgres capabilities %v, %v", caps, err)
	}
	// What CloudNativePG generates, minus archive_timeout.
	generated := map[string]string{
		"archive_mode": "on", "archive_command": "/controller/manager wal-archive --log-destination /controller/log/postgres.json %p",
		"wal_level": "logical", "max_wal_senders": "10", "shared_buffers": "128MB", "full_page_writes": "on",
	}
	op := func(t postgres.OperationType_Type) *postgres.OperationType { return &postgres.OperationType{Type: t} }
	res, err := c.EnrichConfiguration(ctx, &postgres.EnrichConfigurationRequest{Configs: generated, ClusterDefinition: cluster("pg", nil), OperationType: op(postgres.OperationType_TYPE_RECONCILE)})
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(generated)
	want["archive_timeout"] = "5min"
	if !maps.Equal(res.GetConfigs(), want) {
		t.Fatalf("enriched %v, want the whole configuration plus archive_timeout %v", res.GetConfigs(), want)
	}
	user := maps.Clone(generated)
	user["archive_timeout"] = "30s"
	cases := []struct {
		name    string
		configs map[string]string
		cluster []byte
		op      *postgres.OperationType
		want    map[string]string
	}{
		{"user setting kept", user, cluster("pg", nil), op(postgres.OperationType_TYPE_INIT), nil},
		{"restore job", generated, cluster("pg", nil), op(postgres.OperationType_TYPE_RESTORE), nil},
		{"major upgrade", generated, cluster("pg", nil), op(postgres.OperationType_TYPE_UPGRADE), nil},
		{"cluster without the plugin", generated, []byte(`{"metadata":{"name":"pg"},"spec":{}}`), op(postgres.OperationType_TYPE_RECONCILE), nil},
		{"operator before cnpg-i v0.3.0", map[string]string{"shared_buffers": "1GB"}, nil, nil,
			map[string]string{"shared_buffers": "1GB", "archive_mode": "on", "archive_timeout": "5min", "wal_level": "replica"}},
	}
	for _, tc := range cases {
		res, err := c.EnrichConfiguration(ctx, &postgres.EnrichConfigurationRequest{Configs: tc.configs, ClusterDefinition: tc.cluster, OperationType: tc.op})
		if err != nil || !maps.Equal(res.GetConfigs(), tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, res.GetConfigs(), err, tc.want)
		}
	}
	_, err = c.EnrichConfiguration(ctx, &postgres.EnrichConfigurationRequest{Configs: generated, ClusterDefinition: []byte("{"), OperationType: op(postgres.OperationType_TYPE_INIT)})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a broken cluster definition: %v", err)
	}
}
