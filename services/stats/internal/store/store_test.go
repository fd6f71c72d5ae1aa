package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
	"github.com/plinth-dev/plinth/services/stats/internal/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open returns a store on a fresh schema, and a function that reopens it on a new pool (a
// restart of the service).
func open(t *testing.T) (*store.Store, func() *store.Store) {
	t.Helper()
	db := testenv.DB(t)
	connect := func() *store.Store {
		pool, err := pg.Open(ctxT(t), db.URL, store.Schema, store.Migrations, events.Migrations())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return store.New(pool)
	}
	return connect(), connect
}

// inTx runs fn in a transaction of the store's pool.
func inTx(t *testing.T, s *store.Store, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := pg.InTx(ctxT(t), store.PoolOf(s), fn); err != nil {
		t.Fatal(err)
	}
}

func class(name string, size, free int64) inventory.DeviceClass {
	return inventory.DeviceClass{Name: name, VolumeGroup: "vg-" + name, SizeBytes: size, FreeBytes: free, Volumes: 1}
}

func TestHeartbeatsKeepTheNewestStateAndCountEach(t *testing.T) {
	t.Parallel()
	s, reopen := open(t)
	ctx := ctxT(t)
	hb := func(at time.Time, addr string, classes ...inventory.DeviceClass) {
		inTx(t, s, func(tx pgx.Tx) error {
			return s.RecordHeartbeat(ctx, tx, inventory.Heartbeat{Node: "n1", At: at, IntervalSeconds: 10, Addresses: []string{addr},
				AgentVersion: "v1", Classes: classes})
		})
	}
	// A capacity report before any heartbeat records the node without one.
	inTx(t, s, func(tx pgx.Tx) error { return s.RecordCapacity(ctx, tx, "n1", class("ssd", 100, 60), t0) })
	nodes, err := s.StorageNodes(ctx)
	if err != nil || len(nodes) != 1 || !nodes[0].HeartbeatAt.IsZero() || len(nodes[0].Classes) != 1 {
		t.Fatalf("after a capacity event: %+v %v", nodes, err)
	}
	hb(t0.Add(2*time.Second), "10.0.0.2", class("ssd", 100, 50), class("hdd", 1000, 900))
	hb(t0.Add(1*time.Second), "10.0.0.1", class("ssd", 100, 99)) // late: counted, but older
	// A capacity report older than the heartbeat's view of the class changes nothing.
	inTx(t, s, func(tx pgx.Tx) error {
		return s.RecordCapacity(ctx, tx, "n1", class("ssd", 100, 1), t0.Add(time.Second))
	})

	s = reopen()
	nodes, err = s.StorageNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.Heartbeats != 2 || !n.HeartbeatAt.Equal(t0.Add(2*time.Second)) || !n.FirstSeen.Equal(t0) ||
		n.Addresses[0] != "10.0.0.2" || n.IntervalSeconds != 10 {
		t.Fatalf("node %+v", n)
	}
	if len(n.Classes) != 2 || n.Classes[0].Name != "hdd" || n.Classes[1].FreeBytes != 50 {
		t.Fatalf("classes %+v; want the newest heartbeat's", n.Classes)
	}
	// A newer heartbeat without the hdd class drops it.
	hb(t0.Add(3*time.Second), "10.0.0.2", class("ssd", 100, 40))
	nodes, _ = s.StorageNodes(ctx)
	if len(nodes[0].Classes) != 1 || nodes[0].Classes[0].FreeBytes != 40 {
		t.Fatalf("classes %+v", nodes[0].Classes)
	}
}

func TestMachinesKeepTheNewestStateAndAreReleasedWithTheirCluster(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := ctxT(t)
	rec := func(name string, state eventsv1.MachineState, at time.Time) {
		inTx(t, s, func(tx pgx.Tx) error {
			return s.RecordMachine(ctx, tx, inventory.Machine{Name: name, Cluster: "c1", Pool: "workers",
				Role: eventsv1.MachineRole_MACHINE_ROLE_WORKER, State: state, Addresses: []string{"10.1.0.1"}, FirstSeen: at, ChangedAt: at})
		})
	}
	rec("m1", eventsv1.MachineState_MACHINE_STATE_READY, t0.Add(2*time.Second))
	rec("m1", eventsv1.MachineState_MACHINE_STATE_PROVISIONING, t0) // late
	rec("m2", eventsv1.MachineState_MACHINE_STATE_FAILED, t0)
	ms, err := s.Machines(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("machines %+v %v", ms, err)
	}
	if ms[0].State != eventsv1.MachineState_MACHINE_STATE_READY || !ms[0].FirstSeen.Equal(t0) || !ms[0].ChangedAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("m1 %+v: the newest state with the earliest first sighting", ms[0])
	}
	inTx(t, s, func(tx pgx.Tx) error { return s.ReleaseMachines(ctx, tx, "c1", t0.Add(time.Second)) })
	ms, _ = s.Machines(ctx)
	if len(ms) != 1 || ms[0].Name != "m1" {
		t.Fatalf("after the cluster's deletion at t0+1s: %+v (m1 changed later and stays)", ms)
	}
	if n, err := s.Forget(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("forget: %d %v; want the released m2 gone", n, err)
	}
}

func TestUsageHistory(t *testing.T) {
	t.Parallel()
	s, reopen := open(t)
	ctx := ctxT(t)
	var samples []cluster.Sample
	for i := range 10 {
		samples = append(samples, cluster.Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: cluster.HealthOK, Used: int64(i)})
	}
	if err := s.AddSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	s = reopen()
	got, err := s.SamplesSince(ctx, t0.Add(5*time.Minute+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Used != 5 || got[4].Used != 9 {
		t.Fatalf("since 5m1s: %+v; want the sample before the window and four in it", got)
	}
	if n, err := s.PruneSamples(ctx, t0.Add(2*time.Minute), 5); err != nil || n != 5 {
		t.Fatalf("pruned %d %v; want 2 by age and 3 more by the cap", n, err)
	}
	got, _ = s.SamplesSince(ctx, time.Time{})
	if len(got) != 5 || got[0].Used != 5 {
		t.Fatalf("after pruning: %+v", got)
	}
}

func TestUsageHistoryBetweenAndAvailable(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := ctxT(t)
	var samples []cluster.Sample
	for i := range 6 {
		samples = append(samples, cluster.Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: cluster.HealthOK,
			Used: int64(i), Total: 10, Available: 8 - int64(i)})
	}
	if err := s.AddSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	// A row from before the available column existed reads as total − used.
	if _, err := store.PoolOf(s).Exec(ctx, `INSERT INTO usage_samples (at, health, checks, used_bytes, total_bytes, osds_up, osds_in, nodes_ready, nodes_total)
		VALUES ($1, 'HEALTH_OK', 0, 3, 10, 0, 0, 0, 0)`, t0.Add(150*time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := s.SamplesBetween(ctx, t0.Add(2*time.Minute), t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Used != 2 || got[0].Available != 6 || got[1].Available != 7 || got[3].Used != 4 || !got[3].At.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("2m to 4m: %+v; want 2m, the old row at 2m30s (available 7), 3m, 4m", got)
	}
}
