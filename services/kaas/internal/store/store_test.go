package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/store"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newStore(t *testing.T) *store.Store {
	t.Helper()
	db := testenv.DB(t)
	pool, err := service.OpenPostgres(context.Background(), db.URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool, 3)
}

func create(t *testing.T, s *store.Store, name string) cluster.View {
	t.Helper()
	v, err := s.Create(context.Background(), cluster.Cluster{Name: name, Provider: "maas", Version: "v1.32.13", TargetVersion: "v1.32.13"},
		[]cluster.Pool{{Name: cluster.ControlPlanePool, Role: cluster.RoleControlPlane, InstanceType: "standard", Count: 1},
			{Name: "w", Role: cluster.RoleWorker, InstanceType: "gpu", Count: 2, Labels: []cluster.Label{{Name: "a", Value: "b"}}}},
		[]byte("sealed"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// outbox returns the payloads in the outbox, oldest first.
func outbox(t *testing.T, s *store.Store) []proto.Message {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT subject, payload FROM outbox ORDER BY id`)
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

func TestCreateGetUpdate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	v := create(t, s, "alpha")
	if v.Status != cluster.StatusProvisioning || v.UID == "" {
		t.Fatalf("new cluster %+v", v.Cluster)
	}
	if _, err := s.Create(ctx, cluster.Cluster{Name: "alpha", Provider: "maas", Version: "v1", TargetVersion: "v1"}, nil, []byte("x")); !errors.Is(err, cluster.ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	got, err := s.Get(ctx, "alpha")
	if err != nil || len(got.Pools) != 2 || got.Pools[1].Labels[0].Value != "b" || got.Pools[1].NextOrdinal != 1 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := s.Get(ctx, "nope"); !cluster.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	boom := errors.New("refused")
	if _, err := s.Update(ctx, "alpha", func(v *cluster.View) error { v.Pools[1].Count = 9; return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "alpha"); got.Pools[1].Count != 2 {
		t.Fatal("a refused change was saved")
	}
	_, err = s.Update(ctx, "alpha", func(v *cluster.View) error {
		v.Pools = append(v.Pools, cluster.Pool{Name: "x", Role: cluster.RoleWorker, InstanceType: "standard", Count: 1})
		v.Deleting = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, "alpha")
	if len(got.Pools) != 3 || !got.Deleting || got.Status != cluster.StatusStopping {
		t.Fatalf("after update %+v", got)
	}
	evs := outbox(t, s)
	if len(evs) != 2 || evs[1].(*eventsv1.ClusterStatusChanged).GetStatus() != eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_STOPPING ||
		evs[1].(*eventsv1.ClusterStatusChanged).GetPreviousStatus() != eventsv1.KaasClusterStatus_KAAS_CLUSTER_STATUS_PROVISIONING {
		t.Fatalf("events %v", evs)
	}
	if sealed, err := s.Secrets(ctx, "alpha"); err != nil || string(sealed) != "sealed" {
		t.Fatal(sealed, err)
	}
}

func TestLeaseIsExclusiveAndFencesWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t)
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
	if _, err := s.Apply(ctx, a.ID, "replica-a", addMachine); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // replica-a stalls past its lease
	b, ok, err := s.Claim(ctx, "replica-b", time.Minute)
	if err != nil || !ok || b.ID != a.ID {
		t.Fatalf("replica-b could not take over an expired lease: %v %v", ok, err)
	}
	if _, err := s.Apply(ctx, a.ID, "replica-a", addMachine); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale owner wrote: %v", err)
	}
	if err := s.Renew(ctx, a.ID, "replica-a", time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale owner renewed: %v", err)
	}
	v, _, err := s.Load(ctx, b.ID)
	if err != nil || len(v.Machines) != 1 || v.Pools[0].NextOrdinal != 2 {
		t.Fatalf("%+v %v", v, err)
	}
	// An API change during the pass makes the release schedule the next pass at once.
	if _, err := s.Update(ctx, "beta", func(v *cluster.View) error { v.Pools[1].Count = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, b, "replica-b", time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Claim(ctx, "replica-a", time.Minute); !ok {
		t.Fatal("a change made during the pass must make the cluster due again")
	}
	evs := outbox(t, s)
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
	s := newStore(t)
	ctx := context.Background()
	create(t, s, "gamma")
	c, _, _ := s.Claim(ctx, "r", time.Minute)
	if _, err := s.Update(ctx, "gamma", func(v *cluster.View) error { v.Deleting = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, c.ID, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "gamma"); !cluster.IsNotFound(err) {
		t.Fatal(err)
	}
	evs := outbox(t, s)
	if last := evs[len(evs)-1].(*eventsv1.ClusterStatusChanged); !last.GetDeleted() {
		t.Fatalf("last event %v", last)
	}
}
