package cluster

import (
	"slices"
	"strings"
	"testing"
)

func names(ms []Machine, pred func(Machine) bool) string {
	var out []string
	for _, m := range ms {
		if pred(m) {
			out = append(out, m.Name)
		}
	}
	return strings.Join(out, ",")
}

func TestPlan(t *testing.T) {
	v := view(func(v *View) {
		v.Pools[1].NextOrdinal = 3
		v.Pools = append(v.Pools, Pool{Name: "new", Role: RoleWorker, Count: 2, NextOrdinal: 1})
	})
	Plan(&v)
	if got := names(v.Machines, func(m Machine) bool { return m.Pool == "new" && m.State == MachineProvisioning }); got != "c-new-1,c-new-2" {
		t.Fatalf("new machines %q", got)
	}
	if v.Pools[2].NextOrdinal != 3 {
		t.Fatal("ordinals must advance")
	}
	v.Pools[1].Count = 1 // scale down: the newest goes
	Plan(&v)
	if got := names(v.Machines, func(m Machine) bool { return m.Release }); got != "c-w-2" {
		t.Fatalf("released %q", got)
	}
	v.Pools[1].Count = 2 // scale up again while c-w-2 leaves: a new machine, never a reused name
	Plan(&v)
	if got := names(v.Machines, func(m Machine) bool { return m.Pool == "w" && !m.Release }); got != "c-w-1,c-w-3" {
		t.Fatalf("pool w %q", got)
	}
	v.Pools[2].Deleting = true
	Plan(&v)
	if got := names(v.Machines, func(m Machine) bool { return m.Release }); got != "c-w-2,c-new-1,c-new-2" {
		t.Fatalf("released %q", got)
	}
	v.Machines = slices.DeleteFunc(v.Machines, func(m Machine) bool { return m.Pool == "new" }) // released
	Plan(&v)
	if _, ok := v.Pool("new"); ok {
		t.Fatal("an emptied deleted pool must go")
	}
	v.Deleting = true
	Plan(&v)
	if got := names(v.Machines, func(m Machine) bool { return !m.Release }); got != "" {
		t.Fatalf("kept while deleting: %q", got)
	}
}

func TestNewMachinesNeverOutrunTheControlPlane(t *testing.T) {
	v := view(func(v *View) { v.TargetVersion = "v1.33.13"; v.Pools[1].Count = 3; v.Pools[1].NextOrdinal = 3 })
	Plan(&v)
	if m := v.Machines[len(v.Machines)-1]; m.Version != "v1.32.13" {
		t.Fatalf("a new worker during the control plane's upgrade got %s", m.Version)
	}
	v = view(func(v *View) {
		v.TargetVersion = "v1.33.13"
		v.Machines[0].Version = "v1.33.13"
		v.Pools[1].Count = 3
		v.Pools[1].NextOrdinal = 3
	})
	Plan(&v)
	if m := v.Machines[len(v.Machines)-1]; m.Version != "v1.33.13" {
		t.Fatalf("a new worker after the control plane's upgrade got %s", m.Version)
	}
	if got := names(v.UpgradeOrder(), func(Machine) bool { return true }); got != "c-control-plane-1,c-w-1,c-w-2,c-w-3" {
		t.Fatal(got)
	}
}
