package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster/clustertest"
)

type noCreds struct{}

func (noCreds) New(string) ([]byte, error)                                { return []byte("sealed"), nil }
func (noCreds) Kubeconfig([]byte, string, string, Caller) ([]byte, error) { return nil, nil }

// lacking is a provider "local" that cannot build machines of the versions it lacks.
type lacking struct{ versions []string }

func (l *lacking) Preflight(provider, version string) error {
	if provider == "local" && slices.Contains(l.versions, version) {
		return fmt.Errorf("kube-apiserver-%s is missing in /x/bin: run make tools-k8s", version)
	}
	return nil
}

// TestRequestsNeedingMachinesArePreflighted: CreateCluster, an upgrade and any change that
// adds machines are refused (ErrUnmet, naming what is missing) when the cluster's provider
// cannot build machines of the version they would run, and change nothing; changes that add
// no machine are not asked about.
func TestRequestsNeedingMachinesArePreflighted(t *testing.T) {
	ctx := context.Background()
	store := clustertest.NewMemory()
	pre := &lacking{versions: []string{"v1.33.13"}}
	s, err := NewService(store, TestRules(t), noCreds{}, nil, pre, "local")
	if err != nil {
		t.Fatal(err)
	}
	unmet := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrUnmet) || !strings.Contains(err.Error(), "the local provider cannot build Kubernetes v1.33.13 machines here: kube-apiserver-v1.33.13 is missing in /x/bin") {
			t.Fatalf("%s: %v, want the missing binary", what, err)
		}
	}
	_, err = s.Create(ctx, CreateSpec{Name: "new", Version: "v1.33.13", ControlPlane: PoolSpec{Count: 1}}, Caller{})
	unmet("create", err)
	if _, err := store.Get(ctx, "new"); !IsNotFound(err) {
		t.Fatalf("a refused create recorded the cluster: %v", err)
	}

	// A v1.32.13 cluster that is up, and one of v1.33.13 (made when its binaries were there).
	v := View{Cluster: Cluster{Name: "old", Provider: "local", Version: "v1.32.13", TargetVersion: "v1.32.13", ReadyOnce: true},
		Pools: []Pool{{Name: ControlPlanePool, Role: RoleControlPlane, Count: 1}, {Name: "w", Role: RoleWorker, Count: 1}}}
	seed(t, store, v)
	newer := v
	newer.Name, newer.UID, newer.Version, newer.TargetVersion = "newer", "newer", "v1.33.13", "v1.33.13"
	seed(t, store, newer)

	unmet("upgrade", s.Upgrade(ctx, "old", "v1.33.13"))
	unmet("scale up", s.Scale(ctx, "newer", []ScaleSpec{{Name: "w", Count: 2}}))
	unmet("add a pool", s.AddPools(ctx, "newer", []PoolSpec{{Name: "g", Count: 1}}))
	if got, _ := store.Get(ctx, "newer"); got.Pools[1].Count != 1 || len(got.Pools) != 2 {
		t.Fatalf("a refused change was saved: %+v", got.Pools)
	}
	if err := s.Scale(ctx, "newer", []ScaleSpec{{Name: "w", Count: 0}}); err != nil {
		t.Fatalf("a scale down needs no machine: %v", err)
	}
	if err := s.AddPools(ctx, "newer", []PoolSpec{{Name: "empty", Count: 0}}); err != nil {
		t.Fatalf("an empty pool needs no machine: %v", err)
	}
	if err := s.Scale(ctx, "old", []ScaleSpec{{Name: "w", Count: 3}}); err != nil {
		t.Fatalf("v1.32.13 machines can be built: %v", err)
	}
	if _, err := s.Create(ctx, CreateSpec{Name: "fine", Version: "v1.32.13", ControlPlane: PoolSpec{Count: 1}}, Caller{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Upgrade(ctx, "old", "v1.32.14"); err != nil {
		t.Fatalf("an upgrade to a version that can be built: %v", err)
	}
}

// seed records v in store through the store's own writes: created, then v's cluster fields.
func seed(t *testing.T, store Store, v View) {
	t.Helper()
	ctx := context.Background()
	if _, err := store.Create(ctx, New(v.Cluster, v.Pools, 0), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(ctx, v.Name, func(before View) (Change, error) {
		after := before.Clone()
		after.ReadyOnce = v.ReadyOnce
		return Settle(before, after, 0), nil
	}); err != nil {
		t.Fatal(err)
	}
}
