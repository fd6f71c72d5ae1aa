package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/store"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster/clustertest"
	"github.com/plinth-dev/plinth/services/kaas/internal/reconciler/reconcilertest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// open opens the store on the database at url, closed when t ends.
func open(t *testing.T, url string) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool, err := service.OpenPostgres(context.Background(), url, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool), pool
}

// newStore is a store on a fresh database, with the test's own pool on it to read the outbox.
func newStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	return open(t, testenv.DB(t).URL)
}

// TestClusterStoreConformance runs cluster.Store's suite on Postgres, plain and reopening
// the store (a new pool on the same database) mid-test.
func TestClusterStoreConformance(t *testing.T) {
	var mu sync.Mutex
	urls := map[*testing.T]string{}
	clustertest.Run(t, func(t *testing.T) (cluster.Store, clustertest.Published) {
		url := testenv.DB(t).URL
		mu.Lock()
		urls[t] = url
		mu.Unlock()
		s, pool := open(t, url)
		return s, func(t *testing.T) []proto.Message { return outbox(t, pool) }
	}, func(t *testing.T, _ cluster.Store) cluster.Store {
		mu.Lock()
		url := urls[t]
		mu.Unlock()
		s, _ := open(t, url)
		return s
	})
}

func create(t *testing.T, s *store.Store, name string) cluster.View {
	t.Helper()
	v, err := s.Create(context.Background(), cluster.New(cluster.Cluster{UID: "uid-" + name, Name: name, Provider: "maas", Version: "v1.32.13", TargetVersion: "v1.32.13"},
		[]cluster.Pool{{Name: cluster.ControlPlanePool, Role: cluster.RoleControlPlane, InstanceType: "standard", Count: 1, NextOrdinal: 1},
			{Name: "w", Role: cluster.RoleWorker, InstanceType: "gpu", Count: 2, Labels: []cluster.Label{{Name: "a", Value: "b"}}, NextOrdinal: 1}}, 3),
		[]byte("sealed"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// update is the API's settled update (cluster.Update) of the cluster called name.
func update(s *store.Store, name string, change func(*cluster.View) error) (cluster.View, error) {
	return s.Update(context.Background(), name, func(v cluster.View) (cluster.Change, error) { return cluster.Update(v, change, 3) })
}

// apply is the reconciler's settled write.
func apply(s *store.Store, id int64, owner string, change func(*cluster.View) error) (cluster.View, error) {
	return s.Apply(context.Background(), id, owner, func(v cluster.View) (cluster.Change, error) { return cluster.Update(v, change, 3) })
}

// outbox returns the payloads in the outbox, oldest first.
func outbox(t *testing.T, pool *pgxpool.Pool) []proto.Message {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT subject, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []proto.Message
	for rows.Next() {
		var subject string
		var payload []byte
		if err := rows.Scan(&subject, &payload); err != nil {
			t.Fatal(err)
		}
		var m proto.Message = &eventsv1.ClusterStatusChanged{}
		if subject == "plinth.kaas.machine.state_changed" {
			m = &eventsv1.MachineStateChanged{}
		}
		if err := proto.Unmarshal(payload, m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestLeaseIsExclusiveAndFencesWrites(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	create(t, s, "beta")
	a, ok, err := s.Claim(ctx, "replica-a", 300*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, _ := s.Claim(ctx, "replica-b", time.Minute); ok {
		t.Fatal("two replicas hold one cluster")
	}
	addMachine := func(v *cluster.View) error {
		v.Machines = append(v.Machines, cluster.Machine{Pool: cluster.ControlPlanePool, Name: "beta-control-plane-1", Ordinal: 1,
			Role: cluster.RoleControlPlane, State: cluster.MachineProvisioning, Version: "v1.32.13"})
		v.Pools[0].NextOrdinal = 2
		return nil
	}
	if _, err := apply(s, a.ID, "replica-a", addMachine); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // replica-a stalls past its lease
	b, ok, err := s.Claim(ctx, "replica-b", time.Minute)
	if err != nil || !ok || b.ID != a.ID {
		t.Fatalf("replica-b could not take over an expired lease: %v %v", ok, err)
	}
	if _, err := apply(s, a.ID, "replica-a", addMachine); !errors.Is(err, cluster.ErrLeaseLost) {
		t.Fatalf("a stale owner wrote: %v", err)
	}
	if err := s.Renew(ctx, a.ID, "replica-a", time.Minute); !errors.Is(err, cluster.ErrLeaseLost) {
		t.Fatalf("a stale owner renewed: %v", err)
	}
	v, _, err := s.Load(ctx, b.ID)
	if err != nil || len(v.Machines) != 1 || v.Pools[0].NextOrdinal != 2 {
		t.Fatalf("%+v %v", v, err)
	}
	// An API change during the pass makes the release schedule the next pass at once.
	if _, err := update(s, "beta", func(v *cluster.View) error { v.Pools[1].Count = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, b, "replica-b", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Claim(ctx, "replica-a", time.Minute); !ok {
		t.Fatal("a change made during the pass must make the cluster due again")
	}
	evs := outbox(t, pool)
	var machine *eventsv1.MachineStateChanged
	for _, e := range evs {
		if m, ok := e.(*eventsv1.MachineStateChanged); ok {
			machine = m
		}
	}
	if machine == nil || machine.GetName() != "beta-control-plane-1" || machine.GetState() != eventsv1.MachineState_MACHINE_STATE_PROVISIONING ||
		machine.GetRole() != eventsv1.MachineRole_MACHINE_ROLE_CONTROL_PLANE || machine.GetInstanceType() != "standard" {
		t.Fatalf("machine event %v", machine)
	}
}

func TestRemoveAfterEveryMachineIsReleased(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	create(t, s, "gamma")
	c, _, _ := s.Claim(ctx, "r", time.Minute)
	if _, err := update(s, "gamma", func(v *cluster.View) error { v.Deleting = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, c.ID, "r", cluster.Remove); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "gamma"); !cluster.IsNotFound(err) {
		t.Fatal(err)
	}
	evs := outbox(t, pool)
	if last := evs[len(evs)-1].(*eventsv1.ClusterStatusChanged); !last.GetDeleted() {
		t.Fatalf("last event %v", last)
	}
}

// TestReconcilerStoreConformance runs reconciler.Store's suite on Postgres, plain and
// reopening the store (a new pool on the same database) mid-test.
func TestReconcilerStoreConformance(t *testing.T) {
	factory, reopen := testenv.Reopenable(func(t *testing.T, url string) (reconcilertest.Store, func()) {
		pool, err := service.OpenPostgres(context.Background(), url, store.Schema, store.Migrations)
		if err != nil {
			t.Fatal(err)
		}
		return store.New(pool), pool.Close
	})
	reconcilertest.Run(t, factory, reopen)
}

// TestTimelineRecordsStatusChanges: every status change is kept with its message and the
// user whose request caused it, oldest first; a change that keeps the status adds nothing.
func TestTimelineRecordsStatusChanges(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	create(t, s, "delta")
	asAlice := metadata.NewIncomingContext(ctx, metadata.Pairs(authn.AccountHeader, "u-1", authn.NameHeader, "alice"))
	if _, err := s.Update(asAlice, "delta", func(v cluster.View) (cluster.Change, error) {
		return cluster.Update(v, func(v *cluster.View) error { v.Deleting = true; return nil }, 3)
	}); err != nil {
		t.Fatal(err)
	}
	// Same status again: no entry.
	if _, err := update(s, "delta", func(v *cluster.View) error { v.Attempts = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "delta")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Status != cluster.StatusProvisioning || h[1].Status != cluster.StatusStopping ||
		h[1].Actor != "alice" || h[0].Actor != "" || !strings.HasPrefix(h[1].Message, "deleting") || h[1].Time.Before(h[0].Time) {
		t.Fatalf("timeline %+v", h)
	}

}

// TestTimelineKeepsTheNewest100AndGoesWithItsCluster flips a worker between failed and ready
// 110 times (DEGRADED ⇄ RUNNING).
func TestTimelineKeepsTheNewest100AndGoesWithItsCluster(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	create(t, s, "epsilon")
	c, ok, err := s.Claim(ctx, "r", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := apply(s, c.ID, "r", func(v *cluster.View) error {
		for _, p := range v.Pools {
			for range p.Count {
				v.Machines = append(v.Machines, cluster.Machine{Pool: p.Name, Name: fmt.Sprintf("m-%d", len(v.Machines)), Role: p.Role, State: cluster.MachineReady, Version: v.Version})
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 110 {
		state := cluster.MachineFailed
		if i%2 == 1 {
			state = cluster.MachineReady
		}
		if _, err := apply(s, c.ID, "r", func(v *cluster.View) error { v.Machines[len(v.Machines)-1].State = state; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "epsilon")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 100 || h[99].Status != cluster.StatusRunning {
		t.Fatalf("%d entries kept, last %+v", len(h), h[len(h)-1])
	}

	if _, err := update(s, "epsilon", func(v *cluster.View) error { v.Deleting = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(s, c.ID, "r", func(v *cluster.View) error { v.Machines = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, c.ID, "r", cluster.Remove); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM status_history h WHERE NOT EXISTS (SELECT 1 FROM clusters c WHERE c.id = h.cluster_id)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d orphaned timeline entries (%v)", left, err)
	}
	if h, err := s.History(ctx, "epsilon"); err != nil || len(h) != 0 {
		t.Fatalf("timeline of a removed cluster: %v %v", h, err)
	}
}
