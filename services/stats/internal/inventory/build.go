package inventory

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Node roles in the inventory.
const (
	RoleStorage      = "storage"
	RoleControlPlane = "control-plane"
	RoleWorker       = "worker"
)

// Reader turns the stored inventory into the dashboard's view of it.
type Reader struct {
	Store Store
	// Misses is how many heartbeat intervals may pass before a node is stale; default 3.
	Misses int
	// DefaultInterval is assumed for agents that do not say theirs; default 30s.
	DefaultInterval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// ReadInventory reads the stored nodes and machines (a cluster.Reader).
func (r Reader) ReadInventory(ctx context.Context) (*cluster.Inventory, error) {
	nodes, err := r.Store.StorageNodes(ctx)
	if err != nil {
		return nil, err
	}
	machines, err := r.Store.Machines(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	return Build(now, nodes, machines, r.staleAfter), nil
}

// staleAfter is how long a node's heartbeats may be silent.
func (r Reader) staleAfter(intervalSeconds int) time.Duration {
	misses, interval := r.Misses, r.DefaultInterval
	if misses <= 0 {
		misses = 3
	}
	if interval <= 0 {
		interval = 30 * time.Second
	}
	if intervalSeconds > 0 {
		interval = time.Duration(intervalSeconds) * time.Second
	}
	return time.Duration(misses) * interval
}

// Build is the inventory at now: a storage node is READY while its heartbeats are fresh and
// NOT_READY when they are stale (or never came); a machine is READY when kaas says so,
// PROGRESSING while provisioning, updating or releasing, NOT_READY when it failed; released
// machines are gone. A name that is both a storage node and a machine is one node, with both
// roles and the worse status.
func Build(now time.Time, nodes []StorageNode, machines []Machine, staleAfter func(intervalSeconds int) time.Duration) *cluster.Inventory {
	inv := &cluster.Inventory{}
	byName := map[string]*cluster.Node{}
	node := func(name string, since time.Time) *cluster.Node {
		n, ok := byName[name]
		if !ok {
			n = &cluster.Node{Name: name, Status: cluster.StatusReady, Since: since}
			byName[name] = n
		}
		if since.Before(n.Since) {
			n.Since = since
		}
		return n
	}
	for _, s := range nodes {
		n := node(s.Name, s.FirstSeen)
		n.Roles = append(n.Roles, RoleStorage)
		addAddresses(n, s.Addresses)
		silent := now.Sub(s.HeartbeatAt)
		switch {
		case s.HeartbeatAt.IsZero():
			n.Status = worse(n.Status, cluster.StatusNotReady)
			inv.Problems = append(inv.Problems, problem("NODE_STALE", "storage node %s: no heartbeat yet", s.Name))
		case silent > staleAfter(s.IntervalSeconds):
			n.Status = worse(n.Status, cluster.StatusNotReady)
			inv.Problems = append(inv.Problems, problem("NODE_STALE", "storage node %s: no heartbeat for %s", s.Name, silent.Round(time.Second)))
		}
		for _, c := range s.Classes {
			inv.Capacity = inv.Capacity.Add(cluster.Usage{Used: max(c.SizeBytes-c.FreeBytes, 0), Available: c.FreeBytes, Total: c.SizeBytes})
			inv.Volumes += c.Volumes
		}
	}
	for _, m := range machines {
		if m.State == eventsv1.MachineState_MACHINE_STATE_RELEASED {
			continue
		}
		n := node(m.Name, m.FirstSeen)
		switch m.Role {
		case eventsv1.MachineRole_MACHINE_ROLE_CONTROL_PLANE:
			n.Roles = append(n.Roles, RoleControlPlane)
		case eventsv1.MachineRole_MACHINE_ROLE_WORKER:
			n.Roles = append(n.Roles, RoleWorker)
		}
		addAddresses(n, m.Addresses)
		n.Status = worse(n.Status, machineStatus(m.State))
		if m.State == eventsv1.MachineState_MACHINE_STATE_FAILED {
			inv.Problems = append(inv.Problems, problem("MACHINE_FAILED", "machine %s of cluster %s failed: %s", m.Name, m.Cluster, m.Message))
		}
	}
	for _, n := range byName {
		sort.Strings(n.Roles)
		n.Roles = slices.Compact(n.Roles)
		inv.Nodes = append(inv.Nodes, *n)
	}
	sort.Slice(inv.Nodes, func(i, j int) bool { return inv.Nodes[i].Name < inv.Nodes[j].Name })
	return inv
}

func problem(name, format string, args ...any) cluster.Check {
	return cluster.Check{Name: name, Severity: cluster.HealthWarn, Message: fmt.Sprintf(format, args...)}
}

func machineStatus(s eventsv1.MachineState) cluster.Status {
	switch s {
	case eventsv1.MachineState_MACHINE_STATE_READY:
		return cluster.StatusReady
	case eventsv1.MachineState_MACHINE_STATE_PROVISIONING, eventsv1.MachineState_MACHINE_STATE_UPDATING,
		eventsv1.MachineState_MACHINE_STATE_RELEASING:
		return cluster.StatusProgressing
	case eventsv1.MachineState_MACHINE_STATE_FAILED:
		return cluster.StatusNotReady
	}
	return cluster.StatusUnknown
}

// worse is the status that says more is wrong: NOT_READY, then PROGRESSING, UNKNOWN, READY.
func worse(a, b cluster.Status) cluster.Status {
	rank := map[cluster.Status]int{cluster.StatusReady: 0, cluster.StatusUnknown: 1, cluster.StatusProgressing: 2, cluster.StatusNotReady: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// addAddresses fills the node's internal and external address from the first private (or
// unparsable: a host name on the suite's network) and the first public address.
func addAddresses(n *cluster.Node, addresses []string) {
	for _, a := range addresses {
		ip, err := netip.ParseAddr(a)
		public := err == nil && ip.IsGlobalUnicast() && !ip.IsPrivate()
		switch {
		case public && n.ExternalIP == "":
			n.ExternalIP = a
		case !public && n.InternalIP == "":
			n.InternalIP = a
		}
	}
}
