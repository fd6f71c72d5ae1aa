package cluster

import (
	"fmt"
	"strings"
)

// Progress summarises how far a cluster's machines are from what was asked for.
type Progress struct {
	Desired, Ready int // machines wanted by the pools (not being deleted), and those ready
	Upgraded       int // machines running the target version, during an upgrade
	Leaving        int // machines marked for release
	Failed         []Machine
	// Waiting is the first machine still being provisioned or upgraded, if any.
	Waiting *Machine
	// Scaling names a pool whose machine count differs from its desired count.
	Scaling *Pool
	// DeletingPool names a pool being deleted.
	DeletingPool      *Pool
	ControlPlaneReady bool
}

// Converged reports whether there is nothing left to do: every wanted machine exists and is
// ready on the target version, and nothing is leaving or failed.
func (p Progress) Converged(v View) bool {
	return v.Version == v.TargetVersion && p.Ready == p.Desired && p.Leaving == 0 &&
		len(p.Failed) == 0 && p.Scaling == nil && p.DeletingPool == nil && p.Waiting == nil
}

// Measure computes v's progress.
func Measure(v View) Progress {
	var p Progress
	live := map[string]int{}
	cpReady := 0
	for i, m := range v.Machines {
		if m.Release {
			p.Leaving++
			continue
		}
		live[m.Pool]++
		switch m.State {
		case MachineReady:
			p.Ready++
			if m.Role == RoleControlPlane {
				cpReady++
			}
		case MachineFailed:
			p.Failed = append(p.Failed, m)
		default:
			if p.Waiting == nil {
				p.Waiting = &v.Machines[i]
			}
		}
		if m.Version == v.TargetVersion && m.State == MachineReady {
			p.Upgraded++
		}
	}
	for i, pool := range v.Pools {
		if pool.Deleting {
			if p.DeletingPool == nil {
				p.DeletingPool = &v.Pools[i]
			}
			continue
		}
		p.Desired += pool.Count
		if live[pool.Name] != pool.Count && p.Scaling == nil {
			p.Scaling = &v.Pools[i]
		}
		if pool.Role == RoleControlPlane {
			p.ControlPlaneReady = cpReady >= 1 && cpReady == pool.Count
		}
	}
	return p
}

// Derive computes the status a cluster has and says why in plain words. failAfter is how
// many failed reconciler passes in a row (an unreachable provider) turn the cluster ERROR
// (control plane not up) or DEGRADED (it is up).
func Derive(v View, failAfter int) (Status, string) {
	p := Measure(v)
	if v.Deleting {
		if left := len(v.Machines); left > 0 {
			return StatusStopping, fmt.Sprintf("deleting: releasing %d machine(s)%s", left, retrying(v))
		}
		return StatusStopping, "deleting: every machine is released"
	}
	upgrading := v.Version != v.TargetVersion
	for _, m := range p.Failed {
		switch {
		case upgrading:
			return StatusError, fmt.Sprintf("upgrade from %s to %s stopped: machine %s failed: %s", v.Version, v.TargetVersion, m.Name, m.Message)
		case m.Role == RoleControlPlane:
			return StatusError, fmt.Sprintf("control-plane machine %s failed: %s", m.Name, m.Message)
		}
	}
	if len(p.Failed) > 0 {
		m := p.Failed[0]
		return StatusDegraded, fmt.Sprintf("worker machine %s of pool %s failed: %s%s", m.Name, m.Pool, m.Message, more(len(p.Failed)-1, "failed machine"))
	}
	if failAfter > 0 && v.Attempts >= failAfter {
		msg := fmt.Sprintf("cannot reach the %s provider after %d attempts (still retrying): %s", v.Provider, v.Attempts, v.LastError)
		if !p.ControlPlaneReady {
			return StatusError, msg
		}
		return StatusDegraded, msg
	}
	switch {
	case !v.ReadyOnce:
		return StatusProvisioning, fmt.Sprintf("%d of %d machines ready%s%s", p.Ready, p.Desired, waiting(p), retrying(v))
	case upgrading:
		return StatusReconciling, fmt.Sprintf("upgrading from %s to %s: %d of %d machines upgraded%s%s",
			v.Version, v.TargetVersion, p.Upgraded, p.Desired, waiting(p), retrying(v))
	case p.DeletingPool != nil:
		return StatusReconciling, fmt.Sprintf("deleting node pool %s%s", p.DeletingPool.Name, retrying(v))
	case p.Scaling != nil:
		return StatusReconciling, fmt.Sprintf("scaling node pool %s to %d machines%s%s", p.Scaling.Name, p.Scaling.Count, waiting(p), retrying(v))
	case p.Leaving > 0:
		return StatusReconciling, fmt.Sprintf("releasing %d machine(s)%s", p.Leaving, retrying(v))
	case p.Waiting != nil:
		return StatusReconciling, fmt.Sprintf("%d of %d machines ready%s%s", p.Ready, p.Desired, waiting(p), retrying(v))
	}
	return StatusRunning, fmt.Sprintf("all %d machines ready, Kubernetes %s", p.Ready, v.Version)
}

func waiting(p Progress) string {
	m := p.Waiting
	if m == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; waiting for %s (%s", m.Name, m.State)
	if m.ProviderStatus != "" {
		fmt.Fprintf(&b, ", provider: %s", m.ProviderStatus)
	}
	if m.Message != "" {
		fmt.Fprintf(&b, ", %s", m.Message)
	}
	b.WriteString(")")
	return b.String()
}

func retrying(v View) string {
	if v.Attempts == 0 {
		return ""
	}
	return fmt.Sprintf("; retrying after %d failed attempt(s): %s", v.Attempts, v.LastError)
}

func more(n int, what string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more %s(s))", n, what)
}

// settle records what the machines show: an upgrade whose every machine runs the target
// version is finished, and a cluster whose machines all were ready once has been created.
// Settle calls it before deriving the status of every change.
func settle(v *View) {
	if v.Deleting {
		return
	}
	p := Measure(*v)
	if v.Version != v.TargetVersion && p.Upgraded == p.Desired && p.Ready == p.Desired && len(p.Failed) == 0 && p.Waiting == nil {
		v.Version = v.TargetVersion
	}
	if !v.ReadyOnce && p.Converged(*v) {
		v.ReadyOnce = true
	}
}
