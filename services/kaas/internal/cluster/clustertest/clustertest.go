// Package clustertest is the conformance suite every cluster.Store passes (after Waypoint's
// statetest), and Memory, the in-memory store the domain's tests use: each behaviour runs
// on one store, then again reopening the store mid-test, so nothing a behaviour relies on
// lives only in a process.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/events"
)

// Factory returns an empty store for one test and what reads the events it published.
type Factory func(t *testing.T) (cluster.Store, Published)

// Published returns the payloads of every event published so far, oldest first.
type Published func(t *testing.T) []proto.Message

// Reopen returns a store on the same data as s, as a restarted kaas would have.
type Reopen = func(t *testing.T, s cluster.Store) cluster.Store

// StoreTest is one behaviour's run against one store, and what reads its events.
type StoreTest struct {
	*testenv.StoreRun[cluster.Store]
	published Published
}

type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunCases(t, behaviours(), func(t *testing.T, ctx context.Context, restarts bool) *StoreTest {
		s, published := factory(t)
		return &StoreTest{StoreRun: testenv.NewStoreRun(t, ctx, restarts, s, reopen), published: published}
	})
}

// Payloads are evs as a store publishes them (for a ctx that names no user).
func Payloads(t *testing.T, evs []cluster.Event) []proto.Message {
	t.Helper()
	out := make([]proto.Message, 0, len(evs))
	for _, e := range evs {
		p, err := events.Payload(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// newChange is a new cluster called name: a control plane of one and a worker pool of two.
func newChange(name string) cluster.Change {
	c := cluster.Cluster{UID: "uid-" + name, Name: name, Provider: "maas", Version: "v1.32.13", TargetVersion: "v1.32.13"}
	return cluster.New(c, []cluster.Pool{
		{Name: cluster.ControlPlanePool, Role: cluster.RoleControlPlane, InstanceType: "standard", Count: 1, NextOrdinal: 1},
		{Name: "w", Role: cluster.RoleWorker, InstanceType: "gpu", Count: 2, Labels: []cluster.Label{{Name: "a", Value: "b"}}, NextOrdinal: 1},
	}, 3)
}

func (st *StoreTest) create(name string) cluster.View {
	st.T.Helper()
	v, err := st.Store.Create(st.Ctx, newChange(name), []byte("sealed-"+name), nil)
	if err != nil {
		st.T.Fatal(err)
	}
	return v
}

// sameView fails unless got is want as far as a store keeps it (empty and nil alike).
func (st *StoreTest) sameView(what string, got, want cluster.View) {
	st.T.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		st.T.Fatalf("%s differs (-want +got):\n%s", what, diff)
	}
}

// sameEvents fails unless the store published exactly want since it was empty.
func (st *StoreTest) sameEvents(what string, want []proto.Message) {
	st.T.Helper()
	if diff := cmp.Diff(want, st.published(st.T), protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
		st.T.Fatalf("%s: published events differ (-want +got):\n%s", what, diff)
	}
}

func behaviours() []behaviour {
	return append(quotaBehaviours(), []behaviour{
		{Name: "create keeps the change and publishes its events", Run: func(st *StoreTest) {
			c := newChange("alpha")
			v := st.create("alpha")
			if v.ID == 0 || v.CreatedAt.IsZero() || v.Status != cluster.StatusProvisioning || v.UID != "uid-alpha" {
				st.T.Fatalf("created %+v", v.Cluster)
			}
			st.Restart()
			got, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("stored cluster", got, v)
			if got.StatusMessage != c.View.StatusMessage || got.Pools[1].Labels[0].Value != "b" || got.Pools[1].NextOrdinal != 1 {
				st.T.Fatalf("stored %+v", got)
			}
			st.sameEvents("create", Payloads(st.T, c.Events))
			sealed, err := st.Store.Secrets(st.Ctx, "alpha")
			if err != nil || string(sealed) != "sealed-alpha" {
				st.T.Fatalf("secrets %q %v", sealed, err)
			}
			d, sealed, err := st.Store.Detail(st.Ctx, "alpha")
			if err != nil || string(sealed) != "sealed-alpha" {
				st.T.Fatalf("detail %q %v", sealed, err)
			}
			if diff := cmp.Diff(v.Cluster, d); diff != "" {
				st.T.Fatalf("detail differs (-want +got):\n%s", diff)
			}
		}},
		{Name: "a taken name is refused and records nothing", Run: func(st *StoreTest) {
			first := st.create("alpha")
			dup := newChange("alpha")
			dup.View.UID = "other"
			if _, err := st.Store.Create(st.Ctx, dup, []byte("x"), nil); !errors.Is(err, cluster.ErrExists) {
				st.T.Fatalf("duplicate: %v", err)
			}
			st.Restart()
			got, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("after a refused create", got, first)
			st.sameEvents("refused create", Payloads(st.T, newChange("alpha").Events))
		}},
		{Name: "missing clusters are not found", Run: func(st *StoreTest) {
			st.create("alpha")
			st.Restart()
			_, err := st.Store.Get(st.Ctx, "nope")
			notFound(st.T, "get", err)
			_, err = st.Store.Secrets(st.Ctx, "nope")
			notFound(st.T, "secrets", err)
			_, _, err = st.Store.Detail(st.Ctx, "nope")
			notFound(st.T, "detail", err)
			_, err = st.Store.Update(st.Ctx, "nope", func(v cluster.View) (cluster.Change, error) {
				st.T.Error("update called for a missing cluster")
				return cluster.Change{View: v}, nil
			})
			notFound(st.T, "update", err)
		}},
		{Name: "list is by name", Run: func(st *StoreTest) {
			for _, n := range []string{"gamma", "alpha", "beta"} {
				st.create(n)
			}
			st.Restart()
			list, err := st.Store.List(st.Ctx)
			if err != nil {
				st.T.Fatal(err)
			}
			var names []string
			for _, c := range list {
				names = append(names, c.Name)
			}
			if fmt.Sprint(names) != "[alpha beta gamma]" {
				st.T.Fatalf("list %v", names)
			}
		}},
		{Name: "update writes exactly the change and its events", Run: func(st *StoreTest) {
			created := st.create("alpha")
			// The change is not what the domain would derive: the store must not derive.
			status := cluster.StatusRunning
			ev := cluster.StatusChange{Cluster: cluster.Cluster{Name: "alpha", Provider: "maas", Status: status, StatusMessage: "said so"},
				Previous: cluster.StatusProvisioning}
			saved, err := st.Store.Update(st.Ctx, "alpha", func(v cluster.View) (cluster.Change, error) {
				st.sameView("view passed to update", v, created)
				v.Status, v.StatusMessage = status, "said so"
				v.Version, v.TargetVersion, v.ReadyOnce, v.Endpoint = "v1.32.14", "v1.33.13", true, "10.0.0.1:6443"
				v.Attempts, v.LastError = 2, "timeout"
				v.Pools[1].Count, v.Pools[1].NextOrdinal = 3, 2
				v.Pools = append(v.Pools, cluster.Pool{Name: "x", Role: cluster.RoleWorker, InstanceType: "standard", Count: 1, NextOrdinal: 1})
				v.Machines = append(v.Machines, cluster.Machine{Pool: "w", Name: "alpha-w-1", Ordinal: 1, Role: cluster.RoleWorker,
					State: cluster.MachineProvisioning, Version: "v1.32.13", ProviderID: "abc", ProviderState: []byte(`{"job":1}`),
					Hostname: "h", Addresses: []string{"10.0.0.2"}, ProviderStatus: "Deploying", Message: "m"})
				return cluster.Change{View: v, Events: []cluster.Event{ev}}, nil
			})
			if err != nil {
				st.T.Fatal(err)
			}
			if len(saved.Machines) != 1 || saved.Machines[0].ID == 0 || saved.Machines[0].CreatedAt.IsZero() {
				st.T.Fatalf("saved machines %+v", saved.Machines)
			}
			st.Restart()
			got, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("after update", got, saved)
			if got.Status != status || got.Version != "v1.32.14" || got.Attempts != 2 || len(got.Pools) != 3 {
				st.T.Fatalf("stored %+v", got)
			}
			st.sameEvents("update", Payloads(st.T, append(newChange("alpha").Events, ev)))
		}},
		{Name: "update changes and removes pools and machines", Run: func(st *StoreTest) {
			st.create("alpha")
			add := func(v cluster.View) (cluster.Change, error) {
				for i := 1; i <= 2; i++ {
					v.Machines = append(v.Machines, cluster.Machine{Pool: "w", Name: fmt.Sprint("alpha-w-", i), Ordinal: i,
						Role: cluster.RoleWorker, State: cluster.MachineProvisioning, Version: "v1.32.13"})
				}
				return cluster.Change{View: v}, nil
			}
			if _, err := st.Store.Update(st.Ctx, "alpha", add); err != nil {
				st.T.Fatal(err)
			}
			st.Restart()
			saved, err := st.Store.Update(st.Ctx, "alpha", func(v cluster.View) (cluster.Change, error) {
				v.Machines = v.Machines[1:]
				v.Machines[0].State, v.Machines[0].Addresses, v.Machines[0].Release = cluster.MachineReady, []string{"10.0.0.3"}, true
				v.Pools = v.Pools[:1]
				v.Deleting = true
				return cluster.Change{View: v}, nil
			})
			if err != nil {
				st.T.Fatal(err)
			}
			st.Restart()
			got, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("after removals", got, saved)
			if len(got.Machines) != 1 || got.Machines[0].Name != "alpha-w-2" || !got.Machines[0].Release || len(got.Pools) != 1 || !got.Deleting {
				st.T.Fatalf("stored %+v", got)
			}
			st.sameEvents("changes without events", Payloads(st.T, newChange("alpha").Events))
		}},
		{Name: "a refused update saves and publishes nothing", Run: func(st *StoreTest) {
			created := st.create("alpha")
			refused := errors.New("refused")
			_, err := st.Store.Update(st.Ctx, "alpha", func(v cluster.View) (cluster.Change, error) {
				v.Pools[1].Count, v.Deleting = 9, true
				return cluster.Change{View: v, Events: []cluster.Event{cluster.StatusChange{Cluster: v.Cluster}}}, refused
			})
			if !errors.Is(err, refused) {
				st.T.Fatalf("update's error: %v", err)
			}
			st.Restart()
			got, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("after a refused update", got, created)
			st.sameEvents("refused update", Payloads(st.T, newChange("alpha").Events))
		}},
		{Name: "a change cannot take another cluster's machine", Run: func(st *StoreTest) {
			st.create("alpha")
			st.create("beta")
			beta, err := st.Store.Update(st.Ctx, "beta", func(v cluster.View) (cluster.Change, error) {
				v.Machines = append(v.Machines, cluster.Machine{Pool: "w", Name: "beta-w-1", Ordinal: 1, Role: cluster.RoleWorker,
					State: cluster.MachineProvisioning, Version: "v1.32.13"})
				return cluster.Change{View: v}, nil
			})
			if err != nil {
				st.T.Fatal(err)
			}
			st.Restart()
			_, err = st.Store.Update(st.Ctx, "alpha", func(v cluster.View) (cluster.Change, error) {
				m := beta.Machines[0]
				m.State = cluster.MachineFailed
				v.Machines = append(v.Machines, m)
				return cluster.Change{View: v}, nil
			})
			if err == nil {
				st.T.Fatal("alpha's change saved beta's machine")
			}
			got, err := st.Store.Get(st.Ctx, "beta")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("beta", got, beta)
		}},
		{Name: "concurrent updates lose nothing", Run: func(st *StoreTest) {
			st.create("alpha")
			st.Restart()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					_, err := st.Store.Update(st.Ctx, "alpha", func(v cluster.View) (cluster.Change, error) {
						v.Attempts++
						return cluster.Change{View: v}, nil
					})
					if err != nil {
						st.T.Error(err)
					}
				})
			}
			wg.Wait()
			st.Restart()
			if got, err := st.Store.Get(st.Ctx, "alpha"); err != nil || got.Attempts != 8 {
				st.T.Fatalf("attempts after 8 concurrent read-modify-writes: %d %v", got.Attempts, err)
			}
		}},
	}...)
}

func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !cluster.IsNotFound(err) {
		t.Fatalf("%s: %v, want not found", what, err)
	}
}
