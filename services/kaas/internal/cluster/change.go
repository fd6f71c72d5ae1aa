package cluster

import (
	"context"
	"errors"
	"slices"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// MaxStatusMessage bounds the status and machine messages a change saves: they quote
// provider errors.
const MaxStatusMessage = 2048

// Change is what one write of a cluster saves: the cluster as it is to be stored and the
// events the write raises, in the order they are published. A store writes exactly this,
// and the events in the transaction of the change (outbox); it decides nothing.
type Change struct {
	View   View
	Events []Event
}

// Event is something a change publishes: a StatusChange or a MachineChange.
type Event interface{ isEvent() }

// StatusChange: the cluster's status went from Previous to Cluster.Status (Previous is
// StatusUnspecified for a new cluster); Deleted marks the cluster's end.
type StatusChange struct {
	Cluster  Cluster
	Previous Status
	Deleted  bool
}

// MachineChange: a machine of Cluster was added (Previous 0), changed or released.
type MachineChange struct {
	Cluster  Cluster
	Machine  Machine
	Previous MachineState
	// InstanceType is the machine's pool's.
	InstanceType string
}

func (StatusChange) isEvent()  {}
func (MachineChange) isEvent() {}

// New is the change that records a new cluster with its pools: its first status, derived
// like every later one (failAfter as Derive takes it), and the event announcing it.
func New(c Cluster, pools []Pool, failAfter int) Change {
	v := View{Cluster: c, Pools: pools}
	v.Status, v.StatusMessage = Derive(v, failAfter)
	v.StatusMessage = input.Truncate(v.StatusMessage, MaxStatusMessage)
	return Change{View: v, Events: []Event{StatusChange{Cluster: v.Cluster, Previous: StatusUnspecified}}}
}

// Update runs change on a copy of before and settles the result (see Settle); an error
// from change is returned as it is, and nothing is to be saved.
func Update(before View, change func(*View) error, failAfter int) (Change, error) {
	after := before.Clone()
	if err := change(&after); err != nil {
		return Change{}, err
	}
	return Settle(before, after, failAfter), nil
}

// Settle works out what saving after over before means: messages bounded, the upgrade or
// creation that after's machines finished recorded, the status derived, and the events —
// each machine released (gone from after), added or changed in a way its event describes,
// then the status when it changed.
func Settle(before, after View, failAfter int) Change {
	var evs []Event
	instanceType := func(pool string) string {
		if p, ok := after.Pool(pool); ok {
			return p.InstanceType
		}
		if p, ok := before.Pool(pool); ok {
			return p.InstanceType
		}
		return ""
	}
	for _, old := range before.Machines {
		if slices.ContainsFunc(after.Machines, func(m Machine) bool { return m.ID == old.ID }) {
			continue
		}
		gone := old
		gone.State = MachineReleased
		evs = append(evs, MachineChange{Cluster: after.Cluster, Machine: gone, Previous: old.State, InstanceType: instanceType(old.Pool)})
	}
	for i := range after.Machines {
		m := &after.Machines[i]
		m.Message = input.Truncate(m.Message, MaxStatusMessage)
		if m.ID == 0 {
			evs = append(evs, MachineChange{Cluster: after.Cluster, Machine: cloneMachine(*m), InstanceType: instanceType(m.Pool)})
			continue
		}
		j := slices.IndexFunc(before.Machines, func(o Machine) bool { return o.ID == m.ID })
		if j < 0 {
			continue // not the cluster's: a store refuses it
		}
		if old := before.Machines[j]; machineChanged(old, *m) {
			evs = append(evs, MachineChange{Cluster: after.Cluster, Machine: cloneMachine(*m), Previous: old.State, InstanceType: instanceType(m.Pool)})
		}
	}
	settle(&after)
	after.Status, after.StatusMessage = Derive(after, failAfter)
	after.StatusMessage = input.Truncate(after.StatusMessage, MaxStatusMessage)
	after.LastError = input.Truncate(after.LastError, MaxStatusMessage)
	if after.Status != before.Status {
		evs = append(evs, StatusChange{Cluster: after.Cluster, Previous: before.Status})
	}
	return Change{View: after, Events: evs}
}

// machineChanged reports whether a machine changed in a way its event describes: its
// state, addresses, provider id or status, version or message.
func machineChanged(before, after Machine) bool {
	return before.State != after.State || !slices.Equal(before.Addresses, after.Addresses) ||
		before.ProviderStatus != after.ProviderStatus || before.Version != after.Version ||
		before.Message != after.Message || before.ProviderID != after.ProviderID
}

// ErrNotRemovable: only a cluster being deleted whose every machine is released can be removed.
var ErrNotRemovable = errors.New("only a deleted cluster without machines can be removed")

// Remove is the last event of a cluster being deleted once every machine is released;
// ErrNotRemovable before.
func Remove(v View) ([]Event, error) {
	if !v.Deleting || len(v.Machines) > 0 {
		return nil, ErrNotRemovable
	}
	gone := v.Cluster
	gone.StatusMessage = "deleted: every machine is released"
	return []Event{StatusChange{Cluster: gone, Previous: v.Status, Deleted: true}}, nil
}

// Clone copies v deeply enough that changing the copy leaves v as it was.
func (v View) Clone() View {
	out := v
	out.Pools = make([]Pool, len(v.Pools))
	for i, p := range v.Pools {
		p.Labels = slices.Clone(p.Labels)
		out.Pools[i] = p
	}
	out.Machines = make([]Machine, len(v.Machines))
	for i, m := range v.Machines {
		out.Machines[i] = cloneMachine(m)
	}
	return out
}

func cloneMachine(m Machine) Machine {
	m.Addresses = slices.Clone(m.Addresses)
	m.ProviderState = slices.Clone(m.ProviderState)
	return m
}

// update runs change on the cluster called name and saves it settled (see Update).
func (s *Service) update(ctx context.Context, name string, change func(*View) error) (View, error) {
	return s.store.Update(ctx, name, func(before View) (Change, error) { return Update(before, change, s.rules.FailAfter) })
}

// grow is update for changes that may add machines: the result must fit its owner's
// machine quota, counted under the owner's lock (see Store).
func (s *Service) grow(ctx context.Context, name string, change func(*View) error) (View, error) {
	return s.store.UpdateOwned(ctx, name, func(before View, others Usage) (Change, error) {
		c, err := Update(before, change, s.rules.FailAfter)
		if err != nil {
			return Change{}, err
		}
		return c, s.rules.Quota.AdmitChange(before, c.View, others)
	})
}

// mutable refuses changes to a cluster being deleted.
func mutable(v *View) error {
	if v.Deleting {
		return conflict("cluster %q is being deleted", v.Name)
	}
	return nil
}

// Machines is how many machines v counts against its owner's quota: the desired counts of
// its pools not being deleted, the control plane's included (each is a machine somewhere);
// none for a cluster being deleted. Machines being released are not counted: they are
// going, and nothing asks for more of them.
func Machines(v View) int {
	if v.Deleting {
		return 0
	}
	n := 0
	for _, p := range v.Pools {
		if !p.Deleting {
			n += p.Count
		}
	}
	return n
}

// AdmitNew refuses a new cluster v whose owner's other clusters hold others, when v would
// take the owner beyond a limit.
func (q Quota) AdmitNew(v View, others Usage) error {
	if q.MaxClusters > 0 && others.Clusters+1 > q.MaxClusters {
		return &QuotaError{Owner: v.Owner, What: "clusters", Have: others.Clusters, Limit: q.MaxClusters, Adding: 1, Setting: ClustersQuotaSetting}
	}
	return q.admitMachines(v.Owner, others.Machines, Machines(v))
}

// AdmitChange refuses a change of a cluster from before to after that makes it want more
// machines than before and would take its owner (whose other clusters hold others) beyond
// the machine limit. A change that wants no more machines is always allowed.
func (q Quota) AdmitChange(before, after View, others Usage) error {
	was, will := Machines(before), Machines(after)
	if will <= was {
		return nil
	}
	return q.admitMachines(before.Owner, others.Machines+was, will-was)
}

func (q Quota) admitMachines(owner Owner, have, adding int) error {
	if q.MaxMachines > 0 && have+adding > q.MaxMachines {
		return &QuotaError{Owner: owner, What: "machines", Have: have, Limit: q.MaxMachines, Adding: adding, Setting: MachinesQuotaSetting}
	}
	return nil
}
