package upstreamtest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cloudnative-pg/cnpg-i/pkg/backup"
	"github.com/cloudnative-pg/cnpg-i/pkg/identity"
	"github.com/cloudnative-pg/cnpg-i/pkg/lifecycle"
	"github.com/cloudnative-pg/cnpg-i/pkg/metrics"
	"github.com/cloudnative-pg/cnpg-i/pkg/operator"
	"github.com/cloudnative-pg/cnpg-i/pkg/postgres"
	"github.com/cloudnative-pg/cnpg-i/pkg/reconciler"
	restorejob "github.com/cloudnative-pg/cnpg-i/pkg/restore/job"
	"github.com/cloudnative-pg/cnpg-i/pkg/wal"
	"google.golang.org/grpc"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// capabilityOf maps each CNPG-I service to its identity capability, and calls its
// GetCapabilities the way the operator does after reading the identity's list.
var capabilityOf = map[string]struct {
	typ  identity.PluginCapability_Service_Type
	call func(context.Context, grpc.ClientConnInterface) error
}{
	"cnpgi.operator.v1.Operator": {identity.PluginCapability_Service_TYPE_OPERATOR_SERVICE, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := operator.NewOperatorClient(c).GetCapabilities(ctx, &operator.OperatorCapabilitiesRequest{})
		return err
	}},
	"cnpgi.wal.v1.WAL": {identity.PluginCapability_Service_TYPE_WAL_SERVICE, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := wal.NewWALClient(c).GetCapabilities(ctx, &wal.WALCapabilitiesRequest{})
		return err
	}},
	"cnpgi.backup.v1.Backup": {identity.PluginCapability_Service_TYPE_BACKUP_SERVICE, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := backup.NewBackupClient(c).GetCapabilities(ctx, &backup.BackupCapabilitiesRequest{})
		return err
	}},
	"cnpgi.operator_lifecycle.v1.OperatorLifecycle": {identity.PluginCapability_Service_TYPE_LIFECYCLE_SERVICE, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := lifecycle.NewOperatorLifecycleClient(c).GetCapabilities(ctx, &lifecycle.OperatorLifecycleCapabilitiesRequest{})
		return err
	}},
	"cnpgi.reconciler.v1.ReconcilerHooks": {identity.PluginCapability_Service_TYPE_RECONCILER_HOOKS, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := reconciler.NewReconcilerHooksClient(c).GetCapabilities(ctx, &reconciler.ReconcilerHooksCapabilitiesRequest{})
		return err
	}},
	"cnpgi.wal.v1.RestoreJobHooks": {identity.PluginCapability_Service_TYPE_RESTORE_JOB, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := restorejob.NewRestoreJobHooksClient(c).GetCapabilities(ctx, &restorejob.RestoreJobHooksCapabilitiesRequest{})
		return err
	}},
	"cnpgi.identity.v1.Postgres": {identity.PluginCapability_Service_TYPE_POSTGRES, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := postgres.NewPostgresClient(c).GetCapabilities(ctx, &postgres.PostgresCapabilitiesRequest{})
		return err
	}},
	"cnpgi.metrics.v1.Metrics": {identity.PluginCapability_Service_TYPE_METRICS, func(ctx context.Context, c grpc.ClientConnInterface) error {
		_, err := metrics.NewMetricsClient(c).GetCapabilities(ctx, &metrics.MetricsCapabilitiesRequest{})
		return err
	}},
}

// servedServices lists the CNPG-I services the server registered, through reflection.
func servedServices(t *testing.T, ctx context.Context, conn *grpc.ClientConn) []string {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	var out []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		if _, ok := capabilityOf[s.GetName()]; ok || s.GetName() == "cnpgi.identity.v1.Identity" {
			out = append(out, s.GetName())
		}
	}
	return out
}

// handshake runs what the operator runs on every new connection: metadata, capabilities,
// each advertised service's GetCapabilities, Probe. It returns the advertised types.
func handshake(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface) []identity.PluginCapability_Service_Type {
	t.Helper()
	id := identity.NewIdentityClient(conn)
	// cnpg-i marks license and license_url REQUIRED; the description says what the plugin is for.
	meta, err := id.GetPluginMetadata(ctx, &identity.GetPluginMetadataRequest{})
	if err != nil || meta.GetName() != pluginName || meta.GetLicense() != "Apache-2.0" ||
		meta.GetLicenseUrl() != "https://github.com/plinth-dev/plinth/blob/main/LICENSE" ||
		!strings.Contains(meta.GetDescription(), "ackups") || !strings.Contains(meta.GetDescription(), "recovery") {
		t.Fatalf("metadata %v, %v", meta, err)
	}
	caps, err := id.GetPluginCapabilities(ctx, &identity.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var types []identity.PluginCapability_Service_Type
	for _, c := range caps.GetCapabilities() {
		typ := c.GetService().GetType()
		types = append(types, typ)
		for name, svc := range capabilityOf {
			if svc.typ == typ {
				if err := svc.call(ctx, conn); err != nil {
					t.Fatalf("%s is advertised but its GetCapabilities fails: %v", name, err)
				}
			}
		}
	}
	if probe, err := id.Probe(ctx, &identity.ProbeRequest{}); err != nil || !probe.GetReady() {
		t.Fatalf("probe %v, %v", probe, err)
	}
	return types
}

// TestCapabilitiesAreExactlyTheServedServices: the identity lists every CNPG-I service the
// server registered and no other (the operator calls GetCapabilities of each one listed),
// plus the two sidecar-injection marks that make the instance manager load the instance
// services, which come with OperatorLifecycle.
func TestCapabilitiesAreExactlyTheServedServices(t *testing.T) {
	t.Parallel()
	p := startOperatorPlugin(t)
	ctx := ctxT(t)
	advertised := handshake(t, ctx, p.conn)
	var want []identity.PluginCapability_Service_Type
	for _, name := range servedServices(t, ctx, p.conn) {
		if svc, ok := capabilityOf[name]; ok {
			want = append(want, svc.typ)
		}
	}
	want = append(want, identity.PluginCapability_Service_TYPE_INSTANCE_SIDECAR_INJECTION,
		identity.PluginCapability_Service_TYPE_INSTANCE_JOB_SIDECAR_INJECTION)
	slices.Sort(want)
	slices.Sort(advertised)
	if !slices.Equal(advertised, want) {
		t.Fatalf("advertised %v, served %v", advertised, want)
	}
	for _, must := range []identity.PluginCapability_Service_Type{
		identity.PluginCapability_Service_TYPE_OPERATOR_SERVICE, identity.PluginCapability_Service_TYPE_WAL_SERVICE,
		identity.PluginCapability_Service_TYPE_LIFECYCLE_SERVICE, identity.PluginCapability_Service_TYPE_RECONCILER_HOOKS,
		identity.PluginCapability_Service_TYPE_POSTGRES, identity.PluginCapability_Service_TYPE_METRICS,
	} {
		if !slices.Contains(advertised, must) {
			t.Errorf("%v is not offered", must)
		}
	}
}
