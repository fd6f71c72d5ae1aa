package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

// operator is a user of role operator, with a call context carrying their token.
type operator struct {
	name string
	ctx  context.Context
}

func newOperator(t *testing.T, e *env, name string) operator {
	t.Helper()
	tok := newNamedUserToken(t, e, name, authz.Operator)
	return operator{name: name, ctx: metadata.AppendToOutgoingContext(ctxT(t, 10*time.Minute), "authorization", "Bearer "+tok)}
}

// createAs asks kaas for a cluster of one control-plane machine and, when workers > 0, a
// worker pool w of that many machines.
func createAs(c kaaspb.ClusterClient, o operator, name string, workers int32) error {
	var pools []*kaaspb.MachineSpec
	if workers > 0 {
		pools = []*kaaspb.MachineSpec{{Name: "w", Count: workers}}
	}
	_, err := c.CreateCluster(o.ctx, &kaaspb.CreateClusterMsg{Name: name, K8SVersion: "v1.32.13",
		ControlPlaneNodes: &kaaspb.ControlPlaneMachineSpec{Count: 1}, WorkerNodePools: pools})
	return err
}

// exhausted fails unless err is ResourceExhausted with a message containing says.
func exhausted(t *testing.T, what string, err error, says string) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), says) {
		t.Fatalf("%s: %v; want ResourceExhausted saying %q", what, err, says)
	}
}

// ownedClusters counts the clusters stored for the user called name (through the row kaas
// keeps of each cluster's owner).
func ownedClusters(t *testing.T, e *env, name string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM clusters WHERE owner_name = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestQuotasPerUser is issue #36's attack — one operator creating clusters and machines
// until the host gives out — against kaas's default quotas (10 clusters, 50 machines per
// user): the 11th cluster is refused, twenty creates at once leave exactly ten, a scale-up
// or a new pool past 50 machines is refused, each refusal ResourceExhausted naming the limit
// and its setting with nothing stored; another user's clusters do not count; scaling down
// and deleting are always allowed, and deleting frees quota at once.
func TestQuotasPerUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, maastest.Options{})
	// No MAAS machines: the clusters wait for them, which is all the quota needs. Slow passes
	// keep thirty waiting clusters from loading the machine.
	k := e.start(t, e.config(t, func(c *app.Config) { c.Poll, c.Workers = 2*time.Second, 2 }))
	alice, bob, carol := newOperator(t, e, "alice"), newOperator(t, e, "bob"), newOperator(t, e, "carol")

	t.Run("clusters past the quota", func(t *testing.T) {
		for i := range 10 {
			if err := createAs(k.client, alice, fmt.Sprintf("alice-%d", i), 0); err != nil {
				t.Fatalf("alice's cluster %d of 10: %v", i+1, err)
			}
		}
		exhausted(t, "alice's 11th cluster", createAs(k.client, alice, "alice-10", 0),
			"quota: user alice has 10 of 10 clusters (PLINTH_KAAS_MAX_CLUSTERS_PER_USER)")
		if _, err := k.client.GetCluster(alice.ctx, &kaaspb.GetClusterMsg{Name: "alice-10"}); status.Code(err) != codes.NotFound {
			t.Fatalf("the refused cluster: %v; want NotFound", err)
		}
		if n := ownedClusters(t, e, "alice"); n != 10 {
			t.Fatalf("alice owns %d clusters", n)
		}

		// Deleting frees quota at once, while the deleted cluster is still being released.
		if _, err := k.client.DeleteCluster(alice.ctx, &kaaspb.DeleteClusterMsg{Name: "alice-0"}); err != nil {
			t.Fatal(err)
		}
		if err := createAs(k.client, alice, "alice-10", 0); err != nil {
			t.Fatalf("a cluster in place of a deleted one: %v", err)
		}
		exhausted(t, "alice's 11th cluster again", createAs(k.client, alice, "alice-11", 0), "user alice has 10 of 10 clusters")
	})

	t.Run("concurrent creates", func(t *testing.T) {
		// Bob's limit is his own: alice's ten clusters do not count against him.
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for i := range errs {
			wg.Go(func() { errs[i] = createAs(k.client, bob, fmt.Sprintf("bob-%d", i), 0) })
		}
		wg.Wait()
		made := 0
		for _, err := range errs {
			switch {
			case err == nil:
				made++
			case status.Code(err) != codes.ResourceExhausted:
				t.Errorf("a concurrent create: %v", err)
			}
		}
		if made != 10 {
			t.Fatalf("20 concurrent creates at a quota of 10: %d succeeded", made)
		}
		if n := ownedClusters(t, e, "bob"); n != 10 {
			t.Fatalf("20 concurrent creates at a quota of 10: bob owns %d clusters", n)
		}
	})

	t.Run("machines past the quota", func(t *testing.T) {
		// Others hold 20 clusters and their machines; carol's 50 are hers alone.
		if err := createAs(k.client, carol, "carol-a", 40); err != nil {
			t.Fatal(err)
		}
		scale := func(n int32) error {
			_, err := k.client.ScaleNodePool(carol.ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: "carol-a", NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: n}}})
			return err
		}
		if err := scale(49); err != nil {
			t.Fatalf("to 50 machines: %v", err)
		}
		exhausted(t, "a scale-up past 50", scale(50), "quota: user carol has 50 of 50 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 1")
		_, err := k.client.AddNodePool(carol.ctx, &kaaspb.AddNodePoolMsg{ClusterName: "carol-a", WorkerNodePools: []*kaaspb.MachineSpec{{Name: "more", Count: 1}}})
		exhausted(t, "a pool past 50", err, "user carol has 50 of 50 machines")
		exhausted(t, "another cluster past 50", createAs(k.client, carol, "carol-b", 0),
			"quota: user carol has 50 of 50 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 1")
		// Growing her cluster is refused whoever asks: the quota is its owner's.
		_, err = k.client.ScaleNodePool(alice.ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: "carol-a", NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 60}}})
		exhausted(t, "alice growing carol's cluster", err, "user carol has 50 of 50 machines")
		if got := poolsOf(clusterInfo(t, e, k, "carol-a")); got != "control-plane:standard:1 w:standard:49" {
			t.Fatalf("after the refusals carol-a has %s", got)
		}

		exhausted(t, "a first cluster of 61 machines", createAs(k.client, newOperator(t, e, "erin"), "erin", 60),
			"quota: user erin has 0 of 50 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 61")

		// Scaling down is allowed and frees machines; so does deleting the cluster.
		if err := scale(10); err != nil {
			t.Fatalf("a scale-down: %v", err)
		}
		if err := createAs(k.client, carol, "carol-b", 38); err != nil {
			t.Fatalf("a cluster in the freed machines: %v", err)
		}
		if _, err := k.client.DeleteCluster(carol.ctx, &kaaspb.DeleteClusterMsg{Name: "carol-a"}); err != nil {
			t.Fatal(err)
		}
		_, err = k.client.ScaleNodePool(carol.ctx, &kaaspb.ScaleNodePoolMsg{ClusterName: "carol-b", NodePools: []*kaaspb.ScaleNodePoolSpec{{Name: "w", Count: 49}}})
		if err != nil {
			t.Fatalf("growing into a deleted cluster's machines: %v", err)
		}
	})

	t.Run("REST", func(t *testing.T) {
		tok := newNamedUserToken(t, e, "dave", authz.Operator)
		body := `{"name":"dave","k8s_version":"v1.32.13","control_plane_nodes":{"count":1},"worker_node_pools":[{"name":"w","count":50}]}`
		code, v := rest(t, k.RESTAddr(), tok, "POST", "/api/v1/cluster", body)
		if code != 429 || v["code"] != float64(codes.ResourceExhausted) || !strings.Contains(fmt.Sprint(v["message"]), "PLINTH_KAAS_MAX_MACHINES_PER_USER") {
			t.Fatalf("a REST create past the quota: %d %v; want 429, code 8", code, v)
		}
	})
}
