package cluster

import (
	"strings"
	"testing"
)

func view(mut func(*View)) View {
	v := View{Cluster: Cluster{Name: "c", Provider: "maas", Version: "v1.32.13", TargetVersion: "v1.32.13", ReadyOnce: true},
		Pools: []Pool{{Name: ControlPlanePool, Role: RoleControlPlane, Count: 1}, {Name: "w", Role: RoleWorker, Count: 2}},
		Machines: []Machine{
			{Name: "c-control-plane-1", Pool: ControlPlanePool, Role: RoleControlPlane, State: MachineReady, Version: "v1.32.13", Ordinal: 1},
			{Name: "c-w-1", Pool: "w", Role: RoleWorker, State: MachineReady, Version: "v1.32.13", Ordinal: 1},
			{Name: "c-w-2", Pool: "w", Role: RoleWorker, State: MachineReady, Version: "v1.32.13", Ordinal: 2},
		}}
	mut(&v)
	return v
}

func TestDeriveStatus(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*View)
		want Status
		says string
	}{
		{"all ready", func(*View) {}, StatusRunning, "all 3 machines ready"},
		{"first creation", func(v *View) {
			v.ReadyOnce = false
			v.Machines[2].State = MachineProvisioning
			v.Machines[2].ProviderStatus = "Deploying"
		},
			StatusProvisioning, "2 of 3 machines ready; waiting for c-w-2 (provisioning, provider: Deploying)"},
		{"scale up", func(v *View) { v.Pools[1].Count = 3 }, StatusReconciling, "scaling node pool w to 3"},
		{"scale down", func(v *View) { v.Machines[2].Release = true; v.Pools[1].Count = 1 }, StatusReconciling, "releasing 1 machine"},
		{"upgrade", func(v *View) { v.TargetVersion = "v1.33.13"; v.Machines[0].Version = "v1.33.13" }, StatusReconciling, "upgrading from v1.32.13 to v1.33.13: 1 of 3 machines upgraded"},
		{"pool deleted", func(v *View) { v.Pools[1].Deleting = true }, StatusReconciling, "deleting node pool w"},
		{"deleting", func(v *View) { v.Deleting = true }, StatusStopping, "releasing 3 machine(s)"},
		{"worker failed", func(v *View) { v.Machines[1].State = MachineFailed; v.Machines[1].Message = "Failed deployment" },
			StatusDegraded, "worker machine c-w-1 of pool w failed: Failed deployment"},
		{"control plane failed", func(v *View) { v.Machines[0].State = MachineFailed; v.Machines[0].Message = "boom" },
			StatusError, "control-plane machine c-control-plane-1 failed: boom"},
		{"upgrade failed", func(v *View) {
			v.TargetVersion = "v1.33.13"
			v.Machines[2].State = MachineFailed
			v.Machines[2].Message = "apiserver did not start"
		}, StatusError, "upgrade from v1.32.13 to v1.33.13 stopped: machine c-w-2 failed"},
		{"provider down early", func(v *View) {
			v.ReadyOnce = false
			v.Machines[0].State = MachineProvisioning
			v.Attempts, v.LastError = 5, "connection refused"
		}, StatusError, "cannot reach the maas provider after 5 attempts (still retrying): connection refused"},
		{"provider down later", func(v *View) { v.Pools[1].Count = 3; v.Attempts, v.LastError = 5, "connection refused" }, StatusDegraded, "cannot reach"},
		{"provider flapping", func(v *View) { v.Pools[1].Count = 3; v.Attempts, v.LastError = 1, "timeout" }, StatusReconciling, "retrying after 1 failed attempt(s): timeout"},
	}
	for _, tc := range cases {
		st, msg := Derive(view(tc.mut), 5)
		if st != tc.want || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.name, st, msg, tc.want, tc.says)
		}
	}
	if !Measure(view(func(*View) {})).Converged(view(func(*View) {})) {
		t.Fatal("a running cluster has converged")
	}
}
