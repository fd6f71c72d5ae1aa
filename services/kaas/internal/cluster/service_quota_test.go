package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster/clustertest"
)

// TestServiceKeepsEachOwnerWithinTheQuota: the owner of a cluster is the caller who created
// it; creating past the cluster or machine limit, and scaling or adding pools past the
// machine limit, are refused (ErrQuota, naming the limit) and saved nothing; another
// owner's clusters do not count; scaling down and deleting are always allowed and free
// quota at once.
func TestServiceKeepsEachOwnerWithinTheQuota(t *testing.T) {
	ctx := context.Background()
	store := clustertest.NewMemory()
	rules := TestRules(t)
	rules.Quota = Quota{MaxClusters: 2, MaxMachines: 6}
	s, err := NewService(store, rules, noCreds{}, nil, &lacking{}, "local")
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := Caller{ID: "alice-id", Name: "alice"}, Caller{ID: "bob-id", Name: "bob"}
	create := func(who Caller, name string, workers int) error {
		_, err := s.Create(ctx, CreateSpec{Name: name, ControlPlane: PoolSpec{Count: 1}, Workers: []PoolSpec{{Name: "w", Count: workers}}}, who)
		return err
	}
	refused := func(what string, err error, says string) {
		t.Helper()
		if !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), says) {
			t.Fatalf("%s: %v, want a quota error saying %q", what, err, says)
		}
	}
	if err := create(alice, "a1", 1); err != nil {
		t.Fatal(err)
	}
	if v, err := store.Get(ctx, "a1"); err != nil || v.Owner != (Owner{ID: "alice-id", Name: "alice"}) {
		t.Fatalf("owner of a1: %+v %v", v.Owner, err)
	}
	refused("too many machines", create(alice, "a2", 4), "user alice has 2 of 6 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 5")
	if err := create(alice, "a2", 3); err != nil {
		t.Fatal(err)
	}
	refused("a third cluster", create(alice, "a3", 0), "user alice has 2 of 2 clusters (PLINTH_KAAS_MAX_CLUSTERS_PER_USER)")
	if _, err := store.Get(ctx, "a3"); !IsNotFound(err) {
		t.Fatalf("a refused create recorded the cluster: %v", err)
	}
	if err := create(bob, "b1", 5); err != nil {
		t.Fatalf("alice's clusters count against bob: %v", err)
	}

	// Alice holds 6 of 6 machines: growing is refused, whichever way.
	refused("scale up", s.Scale(ctx, "a1", []ScaleSpec{{Name: "w", Count: 2}}), "user alice has 6 of 6 machines")
	refused("add a pool", s.AddPools(ctx, "a1", []PoolSpec{{Name: "more", Count: 1}}), "user alice has 6 of 6 machines")
	refused("growing her other cluster", s.Scale(ctx, "a2", []ScaleSpec{{Name: "w", Count: 4}}), "user alice has 6 of 6 machines")
	if v, _ := store.Get(ctx, "a1"); len(v.Pools) != 2 || v.Pools[1].Count != 1 {
		t.Fatalf("a refused change was saved: %+v", v.Pools)
	}
	if err := s.AddPools(ctx, "a1", []PoolSpec{{Name: "empty", Count: 0}}); err != nil {
		t.Fatalf("a pool of no machines: %v", err)
	}

	// Scaling down frees machines at once; so does deleting a pool, and a cluster.
	if err := s.Scale(ctx, "a2", []ScaleSpec{{Name: "w", Count: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale(ctx, "a1", []ScaleSpec{{Name: "w", Count: 3}}); err != nil {
		t.Fatalf("scaling into the freed machines: %v", err)
	}
	if err := s.DeletePools(ctx, "a1", []string{"w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Scale(ctx, "a2", []ScaleSpec{{Name: "w", Count: 4}}); err != nil {
		t.Fatalf("scaling into a deleted pool's machines: %v", err)
	}
	if _, _, err := s.Delete(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if err := create(alice, "a3", 4); err != nil {
		t.Fatalf("a deleted cluster still counts: %v", err)
	}
}
