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

// TestExplainGivesCauseAndNextStep: each failure kind has a short cause naming the machine
// and the provider and a next step; a healthy or merely busy cluster has none.
func TestExplainGivesCauseAndNextStep(t *testing.T) {
	cases := []struct {
		name    string
		mut     func(*View)
		kind    string
		says    string
		next    string
		machine string
	}{
		{"all ready", func(*View) {}, "", "", "", ""},
		{"scale up", func(v *View) { v.Pools[1].Count = 3 }, "", "", "", ""},
		{"worker failed", func(v *View) { v.Machines[1].State = MachineFailed; v.Machines[1].Message = "Failed deployment: disk" },
			CauseWorkerFailed, "Worker machine c-w-1 of pool w failed at the maas provider.", "Scale pool w down", "c-w-1"},
		{"two workers failed", func(v *View) {
			v.Machines[1].State, v.Machines[2].State = MachineFailed, MachineFailed
		}, CauseWorkerFailed, "failed at the maas provider (1 more failed).", "delete the pool", "c-w-1"},
		{"control plane failed", func(v *View) {
			v.Machines[0].State = MachineFailed
			v.Machines[0].Message = "F1126 instance.go:226] boom"
		},
			CauseControlPlaneFailed, "Control-plane machine c-control-plane-1 failed at the maas provider.", "delete the cluster and create it again", "c-control-plane-1"},
		{"upgrade failed", func(v *View) {
			v.TargetVersion = "v1.33.13"
			v.Machines[2].State = MachineFailed
		}, CauseUpgradeFailed, "The upgrade from v1.32.13 to v1.33.13 stopped: machine c-w-2 failed", "Scale pool w down", "c-w-2"},
		{"provider down", func(v *View) {
			v.Provider = "vagrant"
			v.Pools[1].Count = 3
			v.Attempts, v.LastError = 5, "connection refused"
		},
			CauseProviderUnreachable, "kaas cannot reach the vagrant provider (5 attempts in a row)", "a runner is online", ""},
		{"provider flapping", func(v *View) { v.Pools[1].Count = 3; v.Attempts, v.LastError = 1, "timeout" },
			CauseRetrying, "failed 1 time(s) in a row while scaling", "PLINTH_KAAS_MAAS_URL", ""},
		{"deleting, retrying", func(v *View) { v.Deleting = true; v.Attempts = 2 },
			CauseRetrying, "while releasing its machines", "Nothing to do", ""},
	}
	for _, tc := range cases {
		v := view(tc.mut)
		c := Explain(v, 5)
		if c.Kind != tc.kind || !strings.Contains(c.Summary, tc.says) || !strings.Contains(c.NextStep, tc.next) || c.Machine != tc.machine {
			t.Errorf("%s: %+v, want kind %q, summary with %q, next step with %q, machine %q", tc.name, c, tc.kind, tc.says, tc.next, tc.machine)
		}
		for _, m := range v.Machines {
			if m.Message != "" && strings.Contains(c.Summary, m.Message) {
				t.Errorf("%s: the summary carries the raw message %q: %q", tc.name, m.Message, c.Summary)
			}
		}
	}
}
