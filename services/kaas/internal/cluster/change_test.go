package cluster

import (
	"fmt"
	"strings"
	"testing"
)

// TestSettle: what a change saves and publishes, as the store used to work out itself.
func TestSettle(t *testing.T) {
	running := view(func(v *View) {
		v.Pools[0].InstanceType, v.Pools[1].InstanceType = "standard", "gpu"
		for i := range v.Machines {
			v.Machines[i].ID = int64(i + 1)
		}
		v.Status, v.StatusMessage = Derive(*v, 5)
	})
	long := strings.Repeat("x", MaxStatusMessage+10)
	cases := []struct {
		name   string
		change func(*View)
		status Status
		events string // the events, in order
		check  func(t *testing.T, v View)
	}{
		{"nothing changed", func(*View) {}, StatusRunning, "", nil},
		{"a new machine", func(v *View) {
			v.Pools[1].Count = 3
			v.Machines = append(v.Machines, Machine{Pool: "w", Name: "c-w-3", Role: RoleWorker, State: MachineProvisioning, Version: "v1.32.13"})
		}, StatusReconciling, "machine c-w-3 0->provisioning gpu; status RUNNING->RECONCILING", nil},
		{"a machine released", func(v *View) { v.Machines = v.Machines[:2]; v.Pools[1].Count = 1 }, StatusRunning,
			"machine c-w-2 ready->released gpu", nil},
		{"a change its event does not describe", func(v *View) { v.Machines[1].ProviderState = []byte("x"); v.Machines[1].Hostname = "h" },
			StatusRunning, "", nil},
		{"a worker failed", func(v *View) { v.Machines[1].State, v.Machines[1].Message = MachineFailed, long }, StatusDegraded,
			"machine c-w-1 ready->failed gpu; status RUNNING->DEGRADED", func(t *testing.T, v View) {
				if len(v.Machines[1].Message) != MaxStatusMessage || len(v.StatusMessage) != MaxStatusMessage {
					t.Errorf("messages not bounded: %d %d", len(v.Machines[1].Message), len(v.StatusMessage))
				}
			}},
		{"an upgrade finishes", func(v *View) {
			v.TargetVersion = "v1.33.13"
			for i := range v.Machines {
				v.Machines[i].Version = "v1.33.13"
			}
		}, StatusRunning, "machine c-control-plane-1 ready->ready standard; machine c-w-1 ready->ready gpu; machine c-w-2 ready->ready gpu",
			func(t *testing.T, v View) {
				if v.Version != "v1.33.13" {
					t.Errorf("version %s, want the upgrade recorded", v.Version)
				}
			}},
		{"the last error is bounded", func(v *View) { v.Attempts, v.LastError = 1, long }, StatusRunning, "", func(t *testing.T, v View) {
			if len(v.LastError) != MaxStatusMessage {
				t.Errorf("last error %d bytes", len(v.LastError))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Update(running, func(v *View) error { tc.change(v); return nil }, 5)
			if err != nil {
				t.Fatal(err)
			}
			if c.View.Status != tc.status {
				t.Errorf("status %s %q, want %s", c.View.Status, c.View.StatusMessage, tc.status)
			}
			if got := describe(c.Events); got != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			if tc.check != nil {
				tc.check(t, c.View)
			}
		})
	}
	if len(running.Machines) != 3 || running.Machines[1].State != MachineReady {
		t.Fatal("Update changed the view it was given")
	}
}

func TestNewAndRemove(t *testing.T) {
	c := New(Cluster{Name: "c", Version: "v1.32.13", TargetVersion: "v1.32.13"}, []Pool{{Name: ControlPlanePool, Role: RoleControlPlane, Count: 1}}, 5)
	if c.View.Status != StatusProvisioning || c.View.StatusMessage != "0 of 1 machines ready" || describe(c.Events) != "status STATUS_UNSPECIFIED->PROVISIONING" {
		t.Fatalf("new: %s %q %s", c.View.Status, c.View.StatusMessage, describe(c.Events))
	}
	if _, err := Remove(c.View); err != ErrNotRemovable {
		t.Fatalf("remove a live cluster: %v", err)
	}
	gone := c.View
	gone.Deleting, gone.Status = true, StatusStopping
	evs, err := Remove(gone)
	if err != nil || describe(evs) != "status STOPPING->STOPPING deleted" || evs[0].(StatusChange).Cluster.StatusMessage != "deleted: every machine is released" {
		t.Fatalf("remove: %s %v", describe(evs), err)
	}
}

func describe(evs []Event) string {
	var out []string
	for _, e := range evs {
		switch e := e.(type) {
		case StatusChange:
			s := fmt.Sprintf("status %s->%s", e.Previous, e.Cluster.Status)
			if e.Deleted {
				s += " deleted"
			}
			out = append(out, s)
		case MachineChange:
			prev := "0"
			if e.Previous != 0 {
				prev = e.Previous.String()
			}
			out = append(out, fmt.Sprintf("machine %s %s->%s %s", e.Machine.Name, prev, e.Machine.State, e.InstanceType))
		}
	}
	return strings.Join(out, "; ")
}
