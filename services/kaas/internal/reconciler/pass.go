package reconciler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// APIPort is the port of every control-plane machine's API server.
const APIPort = "6443"

// pass is one reconciler pass over one claimed cluster.
type pass struct {
	r     *Reconciler
	claim cluster.Claim
	log   *slog.Logger

	view cluster.View // the cluster as last saved
	prov provider.Provider
	keys *pki.Cluster

	mu   sync.Mutex
	errs []error // provider calls that failed in this pass
}

// run does what can be done now and says when the next pass is due, with an outcome for
// the metrics.
func (p *pass) run(ctx context.Context) (time.Duration, string) {
	v, sealed, err := p.r.store.Load(ctx, p.claim.ID)
	if err != nil {
		return p.aborted(ctx, err)
	}
	p.view = v
	if p.prov, err = p.r.providers.Get(v.Provider); err != nil {
		p.record("", err)
		return p.finish(ctx)
	}
	if p.keys, err = p.r.keys.Open(sealed, v.Name); err != nil {
		p.record("", err)
		return p.finish(ctx)
	}
	if err := p.apply(ctx, func(v *cluster.View) error { cluster.Plan(v); return nil }); err != nil {
		return p.aborted(ctx, err)
	}
	p.release(ctx)
	if p.view.Deleting {
		p.grantAccess(ctx) // forgets the cluster
		if len(p.view.Machines) == 0 && len(p.errs) == 0 {
			if err := p.r.store.Remove(ctx, p.claim.ID, p.r.o.Owner, cluster.Remove); err != nil {
				return p.aborted(ctx, err)
			}
			p.log.Info("cluster deleted: every machine is released")
			return 0, "deleted"
		}
		return p.finish(ctx)
	}
	p.provisionControlPlane(ctx)
	p.grantAccess(ctx)
	p.provisionWorkers(ctx)
	p.upgrade(ctx)
	if cluster.Measure(p.view).Converged(p.view) && len(p.errs) == 0 {
		p.observe(ctx)
	}
	return p.finish(ctx)
}

// aborted ends a pass that could not read or write the store (or lost its lease).
func (p *pass) aborted(ctx context.Context, err error) (time.Duration, string) {
	if errors.Is(err, cluster.ErrLeaseLost) || ctx.Err() != nil {
		p.log.Warn("stopped a pass: the lease is lost or kaas is stopping", "error", context.Cause(ctx))
		return p.r.o.Poll, "lease_lost"
	}
	p.log.Error("a pass failed on the store", "error", err)
	return p.r.retryDelay(3), "failed"
}

// finish records the pass's provider failures (or their end) on the cluster and returns
// when the next pass is due.
func (p *pass) finish(ctx context.Context) (time.Duration, string) {
	var first error
	if len(p.errs) > 0 {
		first = p.errs[0]
	}
	err := p.apply(ctx, func(v *cluster.View) error {
		if first == nil {
			v.Attempts, v.LastError = 0, ""
			return nil
		}
		v.Attempts++
		v.LastError = input.Truncate(first.Error(), 512)
		return nil
	})
	if err != nil {
		return p.aborted(ctx, err)
	}
	switch {
	case first != nil:
		return p.r.retryDelay(p.view.Attempts), "failed"
	case cluster.Measure(p.view).Converged(p.view):
		return p.r.o.Resync, "converged"
	}
	return p.r.o.Poll, "progressing"
}

// record notes a provider call that failed; the pass goes on with other machines.
func (p *pass) record(machine string, err error) {
	if machine != "" {
		err = fmt.Errorf("%s: %w", machine, err)
	}
	p.log.Warn("provider call failed; retrying with backoff", "error", err)
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

// apply saves change on the cluster, settled (cluster.Update) and fenced by the lease, and
// keeps the saved view.
func (p *pass) apply(ctx context.Context, change func(*cluster.View) error) error {
	v, err := p.r.store.Apply(ctx, p.claim.ID, p.r.o.Owner, func(before cluster.View) (cluster.Change, error) {
		return cluster.Update(before, change, p.r.o.FailAfter)
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.view = v
	p.mu.Unlock()
	return nil
}

// current returns the latest saved view (apply replaces it from concurrent calls).
func (p *pass) current() cluster.View {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.view
}

// updateMachine saves fn's change to machine id.
func (p *pass) updateMachine(ctx context.Context, id int64, fn func(v *cluster.View, m *cluster.Machine)) error {
	return p.apply(ctx, func(v *cluster.View) error {
		for i := range v.Machines {
			if v.Machines[i].ID == id {
				fn(v, &v.Machines[i])
				return nil
			}
		}
		return nil // released meanwhile: nothing to update
	})
}

// parallel runs fn for each machine, at most Options.Parallel at once.
func (p *pass) parallel(ctx context.Context, ms []cluster.Machine, fn func(context.Context, cluster.Machine)) {
	sem := make(chan struct{}, p.r.o.Parallel)
	var wg sync.WaitGroup
	for _, m := range ms {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(ctx, m)
		}()
	}
	wg.Wait()
}

// call runs one provider call with the call timeout.
func (p *pass) call(ctx context.Context, fn func(context.Context) (provider.Observation, error)) (provider.Observation, error) {
	ctx, cancel := context.WithTimeout(ctx, p.r.o.CallTimeout)
	defer cancel()
	return fn(ctx)
}

// machine is m as the provider is told about it.
func (p *pass) machine(m cluster.Machine) provider.Machine {
	v := p.current()
	pm := provider.Machine{ClusterUID: v.UID, Cluster: v.Name, Pool: m.Pool, Name: m.Name, Role: m.Role,
		ProviderID: m.ProviderID, State: m.ProviderState}
	if pool, ok := v.Pool(m.Pool); ok {
		pm.InstanceType = pool.InstanceType
	}
	return pm
}

// bootstrap is what machine m must run at version.
func (p *pass) bootstrap(m cluster.Machine, version string) provider.Bootstrap {
	v := p.current()
	b := provider.Bootstrap{Version: version, Endpoint: v.Endpoint, PKI: p.keys, Taints: cluster.NodeTaints(m)}
	cp := v.ControlPlane()
	b.Init = m.Role == cluster.RoleControlPlane && len(cp) > 0 && cp[0].ID == m.ID
	for _, c := range cp {
		if c.State == cluster.MachineReady && len(c.Addresses) > 0 && c.ID != m.ID {
			b.ControlPlane = append(b.ControlPlane, provider.Peer{Name: c.Name, Address: c.Addresses[0]})
		}
	}
	if pool, ok := v.Pool(cluster.ControlPlanePool); ok {
		b.ControlPlaneSize = pool.Count
	}
	if pool, ok := v.Pool(m.Pool); ok {
		b.Labels = cluster.NodeLabels(v.Cluster, *pool, m)
	}
	return b
}

// observed copies what the provider said onto m.
func observed(m *cluster.Machine, o provider.Observation) {
	if o.ProviderID != "" {
		m.ProviderID = o.ProviderID
	}
	if o.Hostname != "" {
		m.Hostname = o.Hostname
	}
	if o.Addresses != nil {
		m.Addresses = slices.Clone(o.Addresses)
	}
	m.ProviderStatus = o.Status
	m.Message = o.Message
	if o.State != nil {
		m.ProviderState = o.State
	}
}

func endpointOf(m cluster.Machine) string {
	if len(m.Addresses) == 0 {
		return ""
	}
	return net.JoinHostPort(m.Addresses[0], APIPort)
}
