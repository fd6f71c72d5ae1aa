package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// snapshot is everything a request could change: clusters (with the generation every API
// change bumps), pools and the outbox.
func snapshot(t *testing.T, e *env) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var out strings.Builder
	for _, q := range []string{
		`SELECT name || ' ' || generation || ' ' || deleting || ' ' || target_version FROM clusters ORDER BY name`,
		`SELECT cluster_id || ' ' || name || ' ' || count || ' ' || deleting FROM pools ORDER BY cluster_id, name`,
		`SELECT count(*)::text FROM outbox WHERE subject = 'plinth.kaas.cluster.status_changed'`,
	} {
		rows, err := conn.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out.WriteString(s + "\n")
		}
		rows.Close()
	}
	return out.String()
}

// TestBadInputIsRefusedAndChangesNothing sends every RPC the mistakes clients make: each is
// answered with the documented code naming the field (or the missing resource, or the
// conflicting state), and the database is exactly as before.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	e.maas.Add(6, "standard")
	c := e.start(t, e.config(t)).client
	ctx := e.ctx(t)
	name := clusterName("keep")
	if _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1},
		WorkerNodePools:   []*kaaspb.MachineSpec{{Name: "w", Count: 1}, {Name: "v", Count: 0}}}); err != nil {
		t.Fatal(err)
	}
	young := clusterName("young") // never becomes ready: its pool asks for a type MAAS lacks
	if _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: young, ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1, InstanceType: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, c, name, kaaspb.ClusterStatus_RUNNING, time.Minute)
	huge := strings.Repeat("x", 1<<20)
	cp := &kaaspb.ControlPlaneMachineSpec{Count: 1}
	type call struct {
		what  string
		do    func() error
		code  codes.Code
		names string // the message starts with (a field) or contains (a resource) this
	}
	calls := []call{
		{"create: no name", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{ControlPlaneNodes: cp})
			return err
		}, codes.InvalidArgument, "name"},
		{"create: upper case", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "Prod", ControlPlaneNodes: cp})
			return err
		}, codes.InvalidArgument, "name"},
		{"create: NUL", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a\x00b", ControlPlaneNodes: cp})
			return err
		}, codes.InvalidArgument, "name"},
		{"create: 1 MiB name", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: huge, ControlPlaneNodes: cp})
			return err
		}, codes.InvalidArgument, "name"},
		{"create: unknown version", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", K8SVersion: "v1.20.0", ControlPlaneNodes: cp})
			return err
		}, codes.InvalidArgument, "k8s_version"},
		{"create: no control plane", func() error { _, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a"}); return err }, codes.InvalidArgument, "control_plane_nodes.count"},
		{"create: two control-plane machines", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 2}})
			return err
		}, codes.InvalidArgument, "control_plane_nodes.count"},
		{"create: unknown instance type", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1, InstanceType: "huge"}})
			return err
		}, codes.InvalidArgument, "control_plane_nodes.instanceType"},
		{"create: pool too big", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", ControlPlaneNodes: cp, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "w", Count: 101}}})
			return err
		}, codes.InvalidArgument, "worker_node_pools[0].count"},
		{"create: duplicate pools", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", ControlPlaneNodes: cp, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "w"}, {Name: "w"}}})
			return err
		}, codes.InvalidArgument, "worker_node_pools[1].name"},
		{"create: bad label", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: "a", ControlPlaneNodes: cp,
				WorkerNodePools: []*kaaspb.MachineSpec{{Name: "w", Labels: []*kaaspb.KubernetesLabel{{Name: "a b", Value: "x"}}}}})
			return err
		}, codes.InvalidArgument, "worker_node_pools[0].labels[0].name"},
		{"create: taken name", func() error {
			_, err := c.CreateCluster(ctx, &kaaspb.CreateClusterMsg{Name: name, ControlPlaneNodes: cp})
			return err
		}, codes.AlreadyExists, name},
		{"get: no name", func() error { _, err := c.GetCluster(ctx, &kaaspb.GetClusterMsg{}); return err }, codes.InvalidArgument, "name"},
		{"get: unknown", func() error { _, err := c.GetCluster(ctx, &kaaspb.GetClusterMsg{Name: "nope"}); return err }, codes.NotFound, "nope"},
		{"delete: NUL", func() error { _, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: "\x00"}); return err }, codes.InvalidArgument, "name"},
		{"delete: unknown", func() error { _, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: "nope"}); return err }, codes.NotFound, "nope"},
		{"nodes: no name", func() error { _, err := c.GetClusterNodesStatus(ctx, &kaaspb.GetClusterNodesStatusMsg{}); return err }, codes.InvalidArgument, "clusterName"},
		{"nodes: unknown", func() error {
			_, err := c.GetClusterNodesStatus(ctx, &kaaspb.GetClusterNodesStatusMsg{ClusterName: "nope"})
			return err
		}, codes.NotFound, "nope"},
		{"add pool: unknown cluster", func() error {
			_, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: "nope", WorkerNodePools: []*kaaspb.MachineSpec{{Name: "p"}}})
			return err
		}, codes.NotFound, "nope"},
		{"add pool: none", func() error { _, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: name}); return err }, codes.InvalidArgument, "worker_node_pools"},
		{"add pool: existing", func() error {
			_, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: name, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "new", Count: 1}, {Name: "w", Count: 1}}})
			return err
		}, codes.AlreadyExists, `node pool "w"`},
		{"add pool: control-plane", func() error {
			_, err := c.AddNodePool(ctx, &kaaspb.AddNodePoolMsg{ClusterName: name, WorkerNodePools: []*kaaspb.MachineSpec{{Name: "control-plane"}}})
			return err
		}, codes.InvalidArgument, "worker_node_pools[0].name"},
		{"delete pool: one missing", func() error {
			_, err := c.DeleteNodePool(ctx, &kaaspb.DeleteNodePoolMsg{ClusterName: name, NodePoolNames: []string{"v", "nope"}})
			return err
		}, codes.NotFound, `node pool "nope"`},
		{"delete pool: control plane", func() error {
			_, err := c.DeleteNodePool(ctx, &kaaspb.DeleteNodePoolMsg{ClusterName: name, NodePoolNames: []string{"control-plane"}})
			return err
		}, codes.InvalidArgument, "node_pool_names[0]"},
		{"delete pool: none", func() error {
			_, err := c.DeleteNodePool(ctx, &kaaspb.DeleteNodePoolMsg{ClusterName: name})
			return err
		}, codes.InvalidArgument, "node_pool_names"},
		{"scale: missing pool", func() error {
			_, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 3}, {Name: "nope", Count: 1}}})
			return err
		}, codes.NotFound, `node pool "nope"`},
		{"scale: negative", func() error {
			_, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: -1}}})
			return err
		}, codes.InvalidArgument, "node_pools[0].count"},
		{"scale: control plane", func() error {
			_, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "control-plane", Count: 3}}})
			return err
		}, codes.InvalidArgument, "node_pools[0].name"},
		{"upgrade info: unknown", func() error {
			_, err := c.GetUpgradeClusterInformation(ctx, &kaaspb.GetUpgradeClusterInformationMsg{Name: "nope"})
			return err
		}, codes.NotFound, "nope"},
		{"upgrade: no version", func() error { _, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name}); return err }, codes.InvalidArgument, "version"},
		{"upgrade: unsupported", func() error {
			_, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.40.0"})
			return err
		}, codes.InvalidArgument, "version"},
		{"upgrade: same version", func() error {
			_, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: name, Version: "v1.32.13"})
			return err
		}, codes.FailedPrecondition, "already runs"},
		{"upgrade: still being created", func() error {
			_, err := c.UpgradeCluster(ctx, &kaaspb.UpgradeClusterMsg{Name: young, Version: "v1.33.13"})
			return err
		}, codes.FailedPrecondition, "still being created"},
	}
	before := snapshot(t, e)
	for _, tc := range calls {
		err := tc.do()
		st := status.Convert(err)
		if st.Code() != tc.code || !(strings.HasPrefix(st.Message(), tc.names) || strings.Contains(st.Message(), tc.names)) || len(st.Message()) > 400 {
			t.Errorf("%s: %v %.300q; want %v naming %q", tc.what, st.Code(), st.Message(), tc.code, tc.names)
		}
	}
	if after := snapshot(t, e); after != before {
		t.Fatalf("refused requests changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A cluster being deleted refuses changes (its deletion is held back: MAAS is down).
	e.maas.SetDown(true)
	if _, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.DeleteCluster(ctx, &kaaspb.DeleteClusterMsg{Name: name}); err != nil || !strings.Contains(r.GetStatus(), "already being deleted") {
		t.Fatalf("deleting twice: %v %v", r, err)
	}
	if _, err := c.ScaleNodePool(ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: name, NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 2}}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("scaling a cluster being deleted: %v", err)
	}
	e.maas.SetDown(false)
	e.waitGone(t, c, name, time.Minute)
}

// TestEveryCallNeedsAToken: without a live token from auth, nothing is served.
func TestEveryCallNeedsAToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	k := e.start(t, e.config(t))
	c := k.client
	for _, ctx := range []context.Context{ctxT(t, 10*time.Second),
		metadata.AppendToOutgoingContext(ctxT(t, 10*time.Second), "authorization", "Bearer plt_forged")} {
		if _, err := c.GetClusterList(ctx, &kaaspb.GetClusterListMsg{}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("GetClusterList without a valid token: %v", err)
		}
		if _, err := k.info.GetCatalog(ctx, &kaasv1.GetCatalogRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("GetCatalog without a valid token: %v", err)
		}
		if _, err := c.GetVersionInformation(ctx, &kaaspb.GetVersionMsg{}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("GetVersionInformation without a valid token: %v", err)
		}
	}
	v, err := c.GetVersionInformation(e.ctx(t), &kaaspb.GetVersionMsg{})
	if err != nil || !v.GetOk() || !strings.HasPrefix(v.GetVersionInformation().GetGoVersion(), "go1.") ||
		v.GetVersionInformation().GetPlatform() == "" || v.GetVersionInformation().GetCompiler() != "gc" {
		t.Fatalf("version %v %v", v, err)
	}
}

// TestClusterInfoCatalogAndRefusals: the catalog is kaas's configuration; a missing cluster
// is NotFound and a name that cannot be one InvalidArgument naming the field.
func TestClusterInfoCatalogAndRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	k := e.start(t, e.config(t, func(c *app.Config) { c.InstanceTypes = []string{"small", "large"}; c.MaxPoolSize = 7 }))
	cat, err := k.info.GetCatalog(e.ctx(t), &kaasv1.GetCatalogRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintln(cat.GetVersions(), cat.GetDefaultVersion(), cat.GetInstanceTypes(), cat.GetMaxPoolSize(), cat.GetControlPlaneSizes(), cat.GetProvider()); got != "[v1.32.13 v1.33.13] v1.33.13 [small large] 7 [1 3 5] maas\n" {
		t.Fatalf("catalog %s", got)
	}
	if _, err := k.info.GetClusterInfo(e.ctx(t), &kaasv1.GetClusterInfoRequest{Name: "nosuch"}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("missing cluster: %v", err)
	}
	if _, err := k.info.GetClusterInfo(e.ctx(t), &kaasv1.GetClusterInfoRequest{Name: "Not A Name"}); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "name") {
		t.Fatalf("bad name: %v", err)
	}
}

// TestHostileClient probes every RPC with huge and NUL strings, unknown fields, garbage and
// oversized metadata: each is refused with a documented code and a short message, and kaas
// keeps answering.
func TestHostileClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	k := e.start(t, e.config(t))
	conn := grpcConn(t, k.GRPCAddr())
	hostiletest.Run(t, hostiletest.Target{Conn: conn, Services: []string{"cnct.kaas.api.Cluster", "plinth.kaas.v1.ClusterInfoService"},
		Metadata: metadata.Pairs("authorization", "Bearer "+e.token)})
}
