package reconciler

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/plinth-dev/plinth/services/kaas/internal/kube"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// release gives back every machine marked for release, in parallel.
func (p *pass) release(ctx context.Context) {
	var leaving []cluster.Machine
	for _, m := range p.current().Machines {
		if m.Release {
			leaving = append(leaving, m)
		}
	}
	p.parallel(ctx, leaving, func(ctx context.Context, m cluster.Machine) {
		if m.State != cluster.MachineReleasing {
			p.deleteNode(ctx, m)
			err := p.updateMachine(ctx, m.ID, func(_ *cluster.View, m *cluster.Machine) { m.State = cluster.MachineReleasing; m.Message = "" })
			if err != nil {
				p.record(m.Name, err)
				return
			}
		}
		o, err := p.call(ctx, func(ctx context.Context) (provider.Observation, error) { return p.prov.Release(ctx, p.machine(m)) })
		if err != nil {
			p.record(m.Name, err)
			return
		}
		err = p.apply(ctx, func(v *cluster.View) error {
			i := slices.IndexFunc(v.Machines, func(x cluster.Machine) bool { return x.ID == m.ID })
			if i < 0 {
				return nil
			}
			if o.Phase == provider.Gone {
				v.Machines = slices.Delete(v.Machines, i, i+1)
				cluster.Plan(v) // a deleted pool whose last machine this was goes too
				return nil
			}
			observed(&v.Machines[i], o)
			return nil
		})
		if err != nil {
			p.record(m.Name, err)
		}
	})
}

// provisionControlPlane deploys the first control-plane machine, then the others one at a
// time: each joins the ones before it (etcd grows one member at a time).
func (p *pass) provisionControlPlane(ctx context.Context) {
	v := p.current()
	for _, m := range v.ControlPlane() {
		switch m.State {
		case cluster.MachineReady:
			continue
		case cluster.MachineProvisioning:
			p.provision(ctx, m)
		}
		return // wait for this one (or it failed: the cluster is in ERROR)
	}
}

// provisionWorkers deploys the workers once the whole control plane is up, in parallel.
func (p *pass) provisionWorkers(ctx context.Context) {
	v := p.current()
	if v.Endpoint == "" || !cluster.Measure(v).ControlPlaneReady {
		return
	}
	var pending []cluster.Machine
	for _, m := range v.Machines {
		if m.Role == cluster.RoleWorker && !m.Release && m.State == cluster.MachineProvisioning {
			pending = append(pending, m)
		}
	}
	p.parallel(ctx, pending, p.provision)
}

// provision takes one step toward machine m being deployed and ready.
func (p *pass) provision(ctx context.Context, m cluster.Machine) {
	if age := time.Since(m.CreatedAt); age > p.r.o.ProvisionTimeout {
		err := p.updateMachine(ctx, m.ID, func(_ *cluster.View, m *cluster.Machine) {
			m.State = cluster.MachineFailed
			m.Message = fmt.Sprintf("not ready %s after it was requested (last seen: %s %s)", p.r.o.ProvisionTimeout, m.ProviderStatus, m.Message)
		})
		if err != nil {
			p.record(m.Name, err)
		}
		return
	}
	boot := p.bootstrap(m, m.Version)
	o, err := p.call(ctx, func(ctx context.Context) (provider.Observation, error) {
		return p.prov.Provision(ctx, p.machine(m), boot)
	})
	if err != nil {
		p.record(m.Name, err)
		return
	}
	err = p.updateMachine(ctx, m.ID, func(v *cluster.View, m *cluster.Machine) {
		observed(m, o)
		switch o.Phase {
		case provider.Ready:
			if len(m.Addresses) == 0 {
				m.Message = "deployed, but the provider reports no address yet"
				return
			}
			m.State, m.Message = cluster.MachineReady, ""
			if boot.Init && v.Endpoint == "" {
				v.Endpoint = endpointOf(*m)
			}
		case provider.Failed:
			m.State = cluster.MachineFailed
		case provider.Gone:
			m.State = cluster.MachineFailed
			m.Message = "the provider no longer has the machine: " + o.Message
		}
	})
	if err != nil {
		p.record(m.Name, err)
	}
}

// upgrade moves the next machine to the target version once nothing else is in flight:
// the control plane first, then the workers, one machine at a time.
func (p *pass) upgrade(ctx context.Context) {
	v := p.current()
	if v.Version == v.TargetVersion {
		return
	}
	for _, m := range v.Machines {
		if m.Release || m.State == cluster.MachineProvisioning || m.State == cluster.MachineFailed {
			return // provision and release first; a failure stops the upgrade (status ERROR)
		}
	}
	i := slices.IndexFunc(v.UpgradeOrder(), func(m cluster.Machine) bool {
		return m.Version != v.TargetVersion || m.State == cluster.MachineUpdating
	})
	if i < 0 {
		return
	}
	m := v.UpgradeOrder()[i]
	target := v.TargetVersion
	if m.State != cluster.MachineUpdating {
		err := p.updateMachine(ctx, m.ID, func(_ *cluster.View, m *cluster.Machine) {
			m.State, m.Message = cluster.MachineUpdating, "upgrading to "+target
		})
		if err != nil {
			p.record(m.Name, err)
			return
		}
	}
	boot := p.bootstrap(m, target)
	o, err := p.call(ctx, func(ctx context.Context) (provider.Observation, error) {
		return p.prov.Upgrade(ctx, p.machine(m), boot)
	})
	if err != nil {
		p.record(m.Name, err)
		return
	}
	err = p.updateMachine(ctx, m.ID, func(_ *cluster.View, m *cluster.Machine) {
		observed(m, o)
		switch o.Phase {
		case provider.Ready:
			m.State, m.Version, m.Message = cluster.MachineReady, target, ""
		case provider.Failed, provider.Gone:
			m.State = cluster.MachineFailed
			m.Message = fmt.Sprintf("upgrade to %s failed: %s", target, o.Message)
		default:
			if m.Message == "" {
				m.Message = "upgrading to " + target
			}
		}
	})
	if err != nil {
		p.record(m.Name, err)
	}
}

// observe looks at every machine of a converged cluster again: a machine that broke or
// vanished at its provider is failed, addresses and provider statuses are refreshed.
func (p *pass) observe(ctx context.Context) {
	p.parallel(ctx, p.current().Machines, func(ctx context.Context, m cluster.Machine) {
		o, err := p.call(ctx, func(ctx context.Context) (provider.Observation, error) { return p.prov.Observe(ctx, p.machine(m)) })
		if err != nil {
			p.record(m.Name, err)
			return
		}
		err = p.updateMachine(ctx, m.ID, func(_ *cluster.View, m *cluster.Machine) {
			switch o.Phase {
			case provider.Failed:
				observed(m, o)
				m.State = cluster.MachineFailed
			case provider.Gone:
				observed(m, o)
				m.State = cluster.MachineFailed
				m.Message = "the machine was released or deleted outside kaas"
			default:
				state := m.ProviderState // Observe reports; it does not move the machine on
				observed(m, o)
				m.ProviderState = state
				m.Message = ""
			}
		})
		if err != nil {
			p.record(m.Name, err)
		}
	})
}

// deleteNode removes a leaving machine's Node from its cluster (as a drain-and-delete
// would), so the cluster does not keep a NotReady node for a machine that is gone. Best
// effort, bounded, and skipped when the whole cluster is being deleted.
func (p *pass) deleteNode(ctx context.Context, m cluster.Machine) {
	v := p.current()
	if v.Deleting || v.Endpoint == "" || m.State == cluster.MachineProvisioning {
		return
	}
	c, err := kube.Connect(p.keys, v.Name, v.Endpoint, 3*time.Second)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.CoreV1().Nodes().Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		p.log.Debug("could not delete the node of a leaving machine", "machine", m.Name, "error", err)
	}
}
