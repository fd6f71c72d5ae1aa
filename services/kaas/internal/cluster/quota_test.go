package cluster

import (
	"errors"
	"strings"
	"testing"
)

func poolsOf(counts ...int) []Pool {
	out := []Pool{{Name: ControlPlanePool, Role: RoleControlPlane, Count: counts[0]}}
	for i, n := range counts[1:] {
		out = append(out, Pool{Name: string(rune('a' + i)), Role: RoleWorker, Count: n})
	}
	return out
}

func TestMachinesCountsWhatIsWanted(t *testing.T) {
	v := View{Pools: poolsOf(3, 4, 5)}
	if got := Machines(v); got != 12 {
		t.Fatalf("control plane 3 + pools 4, 5: %d", got)
	}
	v.Pools[2].Deleting = true
	if got := Machines(v); got != 7 {
		t.Fatalf("a pool being deleted still counts: %d", got)
	}
	v.Deleting = true
	if got := Machines(v); got != 0 {
		t.Fatalf("a cluster being deleted still counts: %d", got)
	}
}

func TestQuotaAdmits(t *testing.T) {
	alice := Owner{ID: "a-id", Name: "alice"}
	owned := func(counts ...int) View {
		return View{Cluster: Cluster{Name: "c", Owner: alice}, Pools: poolsOf(counts...)}
	}
	q := Quota{MaxClusters: 3, MaxMachines: 10}
	cases := []struct {
		name string
		err  error
		want string // "" means admitted; else the message
	}{
		{"first cluster", q.AdmitNew(owned(1, 2), Usage{}), ""},
		{"the last cluster", q.AdmitNew(owned(1), Usage{Clusters: 2, Machines: 2}), ""},
		{"one cluster too many", q.AdmitNew(owned(1), Usage{Clusters: 3, Machines: 3}),
			"quota: user alice has 3 of 3 clusters (PLINTH_KAAS_MAX_CLUSTERS_PER_USER); this request would add 1"},
		{"a cluster with too many machines", q.AdmitNew(owned(3, 5), Usage{Clusters: 1, Machines: 3}),
			"quota: user alice has 3 of 10 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 8"},
		{"a cluster that fills the machines exactly", q.AdmitNew(owned(3, 4), Usage{Clusters: 1, Machines: 3}), ""},
		{"no limits", Quota{}.AdmitNew(owned(5, 100), Usage{Clusters: 1000, Machines: 10000}), ""},
		{"growing to the limit", q.AdmitChange(owned(1, 2), owned(1, 4), Usage{Machines: 5}), ""},
		{"growing past", q.AdmitChange(owned(1, 2), owned(1, 5), Usage{Machines: 6}),
			"quota: user alice has 9 of 10 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 3"},
		{"a new pool past", q.AdmitChange(owned(1, 2), owned(1, 2, 8), Usage{}),
			"quota: user alice has 3 of 10 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 8"},
		{"shrinking while over the limit", q.AdmitChange(owned(1, 20), owned(1, 15), Usage{Machines: 40}), ""},
		{"one pool up, another down, fewer in all", q.AdmitChange(owned(1, 5, 5), owned(1, 9, 0), Usage{Machines: 10}), ""},
		{"one pool up, another down, more in all, over", q.AdmitChange(owned(1, 5, 5), owned(1, 9, 2), Usage{Machines: 10}),
			"quota: user alice has 21 of 10 machines (PLINTH_KAAS_MAX_MACHINES_PER_USER); this request would add 1"},
		{"no owner is counted too", Quota{MaxClusters: 1}.AdmitNew(View{}, Usage{Clusters: 1}),
			"quota: clusters without a recorded owner have 1 of 1 clusters (PLINTH_KAAS_MAX_CLUSTERS_PER_USER); this request would add 1"},
	}
	for _, tc := range cases {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: refused: %v", tc.name, tc.err)
		case tc.want != "" && !errors.Is(tc.err, ErrQuota):
			t.Errorf("%s: %v, want a quota error", tc.name, tc.err)
		case tc.want != "" && tc.err.Error() != tc.want:
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.err, tc.want)
		}
	}
}

func TestQuotaValidateNamesTheSetting(t *testing.T) {
	if err := (Quota{}).Validate(); err != nil {
		t.Fatalf("zero is no limit: %v", err)
	}
	err := Quota{MaxClusters: -1, MaxMachines: -2}.Validate()
	if err == nil || !strings.Contains(err.Error(), "PLINTH_KAAS_MAX_CLUSTERS_PER_USER: is -1") ||
		!strings.Contains(err.Error(), "PLINTH_KAAS_MAX_MACHINES_PER_USER: is -2") {
		t.Fatalf("negative limits: %v", err)
	}
	r := testRules(t)
	r.Quota.MaxMachines = -1
	if err := r.Validate(); err == nil {
		t.Fatal("rules with a negative quota validated")
	}
}
