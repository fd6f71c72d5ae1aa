// Package reconcilertest is the conformance suite every reconciler.Store passes (after
// Waypoint's statetest): the lease that lets replicas reconcile side by side — one owner per
// cluster, taken over when it lapses, fencing a stale owner's writes — and the writes a pass
// makes under it. Each behaviour runs on one store, then again reopening the store mid-test,
// so no lease or write lives only in a process. The store under test also serves the API
// side (cluster.Store), which the suite uses to create clusters and change them mid-pass.
package reconcilertest

import (
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/reconciler"
)

// Store is what the suite needs of an implementation: the reconciler's side and the API's.
type Store interface {
	reconciler.Store
	cluster.Store
}

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) Store

// Reopen returns a store on the same data as s, as a restarted (or another) replica would.
type Reopen = func(t *testing.T, s Store) Store

// StoreTest is one behaviour's run against one store.
type StoreTest = testenv.StoreRun[Store]

type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, behaviours(), factory, reopen)
}

// short is a lease that lapses within a test; long one that does not.
const (
	short = 300 * time.Millisecond
	long  = time.Minute
)

func create(st *StoreTest, name string) cluster.View {
	st.T.Helper()
	c := cluster.New(cluster.Cluster{UID: "uid-" + name, Name: name, Provider: "maas", Version: "v1.32.13", TargetVersion: "v1.32.13"},
		[]cluster.Pool{{Name: cluster.ControlPlanePool, Role: cluster.RoleControlPlane, InstanceType: "standard", Count: 1, NextOrdinal: 1}}, 3)
	return testenv.Must(st.Store.Create(st.Ctx, c, []byte("sealed-"+name), nil))(st.T)
}

func claim(st *StoreTest, owner string, lease time.Duration) cluster.Claim {
	st.T.Helper()
	c, ok, err := st.Store.Claim(st.Ctx, owner, lease)
	if err != nil || !ok {
		st.T.Fatalf("%s could not claim a due cluster: ok %v, %v", owner, ok, err)
	}
	return c
}

func noClaim(st *StoreTest, owner, why string) {
	st.T.Helper()
	if c, ok, err := st.Store.Claim(st.Ctx, owner, long); err != nil || ok {
		st.T.Fatalf("%s claimed %+v (%v): %s", owner, c, err, why)
	}
}

func leaseLost(st *StoreTest, what string, err error) {
	st.T.Helper()
	if !errors.Is(err, cluster.ErrLeaseLost) {
		st.T.Fatalf("%s: %v, want cluster.ErrLeaseLost", what, err)
	}
}

// addMachine is a pass's change: the control plane's first machine.
func addMachine(v cluster.View) (cluster.Change, error) {
	return cluster.Update(v, func(v *cluster.View) error {
		v.Machines = append(v.Machines, cluster.Machine{Pool: cluster.ControlPlanePool, Name: v.Name + "-control-plane-1", Ordinal: 1,
			Role: cluster.RoleControlPlane, State: cluster.MachineProvisioning, Version: v.Version})
		v.Pools[0].NextOrdinal = 2
		return nil
	}, 3)
}

func behaviours() []behaviour {
	return []behaviour{
		{Name: "nothing to claim in an empty store", Run: func(st *StoreTest) {
			noClaim(st, "a", "the store is empty")
		}},
		{Name: "a claim is exclusive while its lease holds, also across a restart", Run: func(st *StoreTest) {
			v := create(st, "alpha")
			c := claim(st, "a", long)
			if c.ID != v.ID || c.Name != "alpha" {
				st.T.Fatalf("claimed %+v, want cluster %d alpha", c, v.ID)
			}
			st.Restart()
			noClaim(st, "b", "two replicas hold one cluster")
			noClaim(st, "a", "a cluster is claimed twice by its owner")
		}},
		{Name: "a lapsed lease is taken over and fences its old owner", Run: func(st *StoreTest) {
			create(st, "beta")
			a := claim(st, "a", short)
			time.Sleep(2 * short) // a stalls past its lease
			st.Restart()
			b := claim(st, "b", long)
			if b.ID != a.ID {
				st.T.Fatalf("b claimed %+v, want a's lapsed %+v", b, a)
			}
			_, err := st.Store.Apply(st.Ctx, a.ID, "a", addMachine)
			leaseLost(st, "apply by the stale owner", err)
			leaseLost(st, "renew by the stale owner", st.Store.Renew(st.Ctx, a.ID, "a", long))
			leaseLost(st, "remove by the stale owner", st.Store.Remove(st.Ctx, a.ID, "a", cluster.Remove))
			v, _, err := st.Store.Load(st.Ctx, b.ID)
			if err != nil || len(v.Machines) != 0 {
				st.T.Fatalf("the stale owner's writes left %+v (%v)", v.Machines, err)
			}
		}},
		{Name: "renew keeps the lease past its first expiry", Run: func(st *StoreTest) {
			create(st, "gamma")
			a := claim(st, "a", short)
			testenv.OK(st.T, st.Store.Renew(st.Ctx, a.ID, "a", long))
			time.Sleep(2 * short)
			st.Restart()
			noClaim(st, "b", "a renewed lease was taken over")
		}},
		{Name: "release schedules the next pass after its delay", Run: func(st *StoreTest) {
			create(st, "delta")
			a := claim(st, "a", long)
			testenv.OK(st.T, st.Store.Release(st.Ctx, a, "a", time.Hour))
			st.Restart()
			noClaim(st, "b", "released for an hour, due at once")
			c := create(st, "epsilon") // another cluster stays claimable
			if got := claim(st, "b", long); got.ID != c.ID {
				st.T.Fatalf("claimed %+v, want the due epsilon", got)
			}
		}},
		{Name: "an API change during the pass makes the cluster due at once", Run: func(st *StoreTest) {
			create(st, "zeta")
			a := claim(st, "a", long)
			if _, err := st.Store.Update(st.Ctx, "zeta", func(v cluster.View) (cluster.Change, error) {
				return cluster.Update(v, func(v *cluster.View) error { v.Pools[0].Count = 3; return nil }, 3)
			}); err != nil {
				st.T.Fatal(err)
			}
			testenv.OK(st.T, st.Store.Release(st.Ctx, a, "a", time.Hour))
			st.Restart()
			if b := claim(st, "b", long); b.ID != a.ID || b.Generation == a.Generation {
				st.T.Fatalf("claimed %+v after an API change to %+v", b, a)
			}
		}},
		{Name: "apply writes the owner's change; a failed update writes nothing", Run: func(st *StoreTest) {
			create(st, "eta")
			a := claim(st, "a", long)
			refused := errors.New("refused by the pass")
			if _, err := st.Store.Apply(st.Ctx, a.ID, "a", func(cluster.View) (cluster.Change, error) { return cluster.Change{}, refused }); !errors.Is(err, refused) {
				st.T.Fatalf("apply with a failing update: %v", err)
			}
			after := testenv.Must(st.Store.Apply(st.Ctx, a.ID, "a", addMachine))(st.T)
			st.Restart()
			v, sealed, err := st.Store.Load(st.Ctx, a.ID)
			if err != nil || string(sealed) != "sealed-eta" || len(v.Machines) != 1 || v.Machines[0].Name != "eta-control-plane-1" ||
				v.Pools[0].NextOrdinal != 2 || len(after.Machines) != 1 {
				st.T.Fatalf("loaded %+v machines %+v, sealed %q (%v)", v.Cluster, v.Machines, sealed, err)
			}
		}},
		{Name: "remove deletes a cluster being deleted; a refused remove deletes nothing", Run: func(st *StoreTest) {
			create(st, "theta")
			a := claim(st, "a", long)
			if err := st.Store.Remove(st.Ctx, a.ID, "a", cluster.Remove); !errors.Is(err, cluster.ErrNotRemovable) {
				st.T.Fatalf("remove of a cluster nobody deletes: %v, want cluster.ErrNotRemovable", err)
			}
			st.Restart()
			if _, err := st.Store.Update(st.Ctx, "theta", func(v cluster.View) (cluster.Change, error) {
				return cluster.Update(v, func(v *cluster.View) error { v.Deleting = true; return nil }, 3)
			}); err != nil {
				st.T.Fatal(err)
			}
			testenv.OK(st.T, st.Store.Remove(st.Ctx, a.ID, "a", cluster.Remove))
			st.Restart()
			if _, err := st.Store.Get(st.Ctx, "theta"); !cluster.IsNotFound(err) {
				st.T.Fatalf("after remove: %v, want not found", err)
			}
			noClaim(st, "b", "a removed cluster is claimed")
		}},
	}
}
