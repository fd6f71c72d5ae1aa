package clustertest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

var (
	alice = cluster.Owner{ID: "6f1c0e9a-alice", Name: "alice"}
	bob   = cluster.Owner{ID: "0b7d24c1-bob", Name: "bob"}
)

// ownedChange is newChange(name) (three machines) created by owner.
func ownedChange(name string, owner cluster.Owner) cluster.Change {
	c := newChange(name)
	c.View.Owner = owner
	return c
}

func (st *StoreTest) createOwned(name string, owner cluster.Owner) cluster.View {
	st.T.Helper()
	v, err := st.Store.Create(st.Ctx, ownedChange(name, owner), []byte("sealed-"+name), func(cluster.Usage) error { return nil })
	if err != nil {
		st.T.Fatal(err)
	}
	return v
}

// usageAtCreate is what Create passes admit for a new cluster of owner (which it then refuses).
func (st *StoreTest) usageAtCreate(owner cluster.Owner) cluster.Usage {
	st.T.Helper()
	var got cluster.Usage
	stop := errors.New("counted")
	_, err := st.Store.Create(st.Ctx, ownedChange("probe", owner), []byte("sealed"), func(u cluster.Usage) error { got = u; return stop })
	if !errors.Is(err, stop) {
		st.T.Fatalf("create's admit was not asked: %v", err)
	}
	return got
}

// usageAtUpdate is what UpdateOwned passes update for the cluster called name (which it
// then refuses).
func (st *StoreTest) usageAtUpdate(name string) cluster.Usage {
	st.T.Helper()
	var got cluster.Usage
	stop := errors.New("counted")
	_, err := st.Store.UpdateOwned(st.Ctx, name, func(_ cluster.View, u cluster.Usage) (cluster.Change, error) { got = u; return cluster.Change{}, stop })
	if !errors.Is(err, stop) {
		st.T.Fatalf("update was not called: %v", err)
	}
	return got
}

// set changes the cluster called name through Update.
func (st *StoreTest) set(name string, change func(*cluster.View)) {
	st.T.Helper()
	_, err := st.Store.Update(st.Ctx, name, func(v cluster.View) (cluster.Change, error) {
		change(&v)
		return cluster.Change{View: v}, nil
	})
	if err != nil {
		st.T.Fatal(err)
	}
}

func quotaBehaviours() []behaviour {
	return []behaviour{
		{Name: "the owner is kept", Run: func(st *StoreTest) {
			st.createOwned("alpha", alice)
			st.Restart()
			v, err := st.Store.Get(st.Ctx, "alpha")
			if err != nil || v.Owner != alice {
				st.T.Fatalf("owner %+v %v", v.Owner, err)
			}
			c, _, err := st.Store.Detail(st.Ctx, "alpha")
			if err != nil || c.Owner != alice {
				st.T.Fatalf("detail's owner %+v %v", c.Owner, err)
			}
		}},
		{Name: "usage counts one owner's clusters and the machines they want", Run: func(st *StoreTest) {
			st.createOwned("a1", alice)
			st.createOwned("a2", alice)
			st.createOwned("b1", bob)
			st.createOwned("nobody", cluster.Owner{})
			st.Restart()
			if u := st.usageAtCreate(alice); u != (cluster.Usage{Clusters: 2, Machines: 6}) {
				st.T.Fatalf("alice's usage at create: %+v", u)
			}
			if u := st.usageAtUpdate("a1"); u != (cluster.Usage{Clusters: 1, Machines: 3}) {
				st.T.Fatalf("alice's usage beside a1: %+v", u)
			}
			if u := st.usageAtCreate(cluster.Owner{}); u != (cluster.Usage{Clusters: 1, Machines: 3}) {
				st.T.Fatalf("usage of the clusters without an owner: %+v", u)
			}
			st.set("a2", func(v *cluster.View) { v.Pools[1].Deleting = true })
			st.Restart()
			if u := st.usageAtCreate(alice); u != (cluster.Usage{Clusters: 2, Machines: 4}) {
				st.T.Fatalf("a pool being deleted still counts: %+v", u)
			}
			st.set("a2", func(v *cluster.View) { v.Deleting = true })
			if u := st.usageAtCreate(alice); u != (cluster.Usage{Clusters: 1, Machines: 3}) {
				st.T.Fatalf("a cluster being deleted still counts: %+v", u)
			}
			if u := st.usageAtUpdate("b1"); u != (cluster.Usage{}) {
				st.T.Fatalf("bob's usage beside his only cluster: %+v", u)
			}
		}},
		{Name: "a refused create or owned update saves and publishes nothing", Run: func(st *StoreTest) {
			created := st.createOwned("a1", alice)
			over := errors.New("over quota")
			if _, err := st.Store.Create(st.Ctx, ownedChange("a2", alice), []byte("x"), func(cluster.Usage) error { return over }); !errors.Is(err, over) {
				st.T.Fatalf("refused create: %v", err)
			}
			_, err := st.Store.UpdateOwned(st.Ctx, "a1", func(v cluster.View, _ cluster.Usage) (cluster.Change, error) {
				v.Pools[1].Count = 9
				return cluster.Change{View: v, Events: []cluster.Event{cluster.StatusChange{Cluster: v.Cluster}}}, over
			})
			if !errors.Is(err, over) {
				st.T.Fatalf("refused update: %v", err)
			}
			st.Restart()
			if _, err := st.Store.Get(st.Ctx, "a2"); !cluster.IsNotFound(err) {
				st.T.Fatalf("a refused create was saved: %v", err)
			}
			got, err := st.Store.Get(st.Ctx, "a1")
			if err != nil {
				st.T.Fatal(err)
			}
			st.sameView("after a refused update", got, created)
			st.sameEvents("refusals", Payloads(st.T, ownedChange("a1", alice).Events))
		}},
		{Name: "concurrent creates of one owner never pass a limit together", Run: func(st *StoreTest) {
			const limit, tries = 3, 16
			st.createOwned("other", bob)
			st.Restart()
			full := errors.New("full")
			var wg sync.WaitGroup
			errs := make([]error, tries)
			for i := range tries {
				wg.Go(func() {
					_, errs[i] = st.Store.Create(st.Ctx, ownedChange(fmt.Sprint("a", i), alice), []byte("sealed"), func(u cluster.Usage) error {
						if u.Clusters >= limit {
							return full
						}
						return nil
					})
				})
			}
			wg.Wait()
			made := 0
			for _, err := range errs {
				switch {
				case err == nil:
					made++
				case !errors.Is(err, full):
					st.T.Error(err)
				}
			}
			st.Restart()
			list, err := st.Store.List(st.Ctx)
			if err != nil {
				st.T.Fatal(err)
			}
			if made != limit || len(list) != limit+1 {
				st.T.Fatalf("%d concurrent creates at a limit of %d: %d succeeded, %d clusters stored", tries, limit, made, len(list))
			}
		}},
		{Name: "concurrent growth of one owner's clusters never passes a limit together", Run: func(st *StoreTest) {
			const limit = 10 // two clusters of 3 machines: 4 more fit
			st.createOwned("a1", alice)
			st.createOwned("a2", alice)
			st.Restart()
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					_, err := st.Store.UpdateOwned(st.Ctx, []string{"a1", "a2"}[i%2], func(v cluster.View, others cluster.Usage) (cluster.Change, error) {
						if others.Machines+cluster.Machines(v)+1 <= limit {
							v.Pools[1].Count++
						}
						return cluster.Change{View: v}, nil
					})
					if err != nil {
						st.T.Error(err)
					}
				})
			}
			wg.Wait()
			st.Restart()
			total := 0
			for _, n := range []string{"a1", "a2"} {
				v, err := st.Store.Get(st.Ctx, n)
				if err != nil {
					st.T.Fatal(err)
				}
				total += cluster.Machines(v)
			}
			if total != limit {
				st.T.Fatalf("16 concurrent scale-ups of two clusters at a limit of %d machines: %d wanted", limit, total)
			}
		}},
	}
}
