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

// Cause says in one sentence what is wrong with a cluster and what the user can do; the
// status message (Derive) stays the whole story for API clients. Kind is a stable identifier.
type Cause struct {
	Kind, Summary, NextStep string
	// Machine names the machine concerned, if one is.
	Machine string
}

// The cause kinds.
const (
	CauseControlPlaneFailed  = "control_plane_failed"
	CauseWorkerFailed        = "worker_failed"
	CauseUpgradeFailed       = "upgrade_failed"
	CauseProviderUnreachable = "provider_unreachable"
	CauseRetrying            = "retrying"
)

// Derive computes the status a cluster has and says why in plain words. failAfter is how
// many failed reconciler passes in a row (an unreachable provider) turn the cluster ERROR
// (control plane not up) or DEGRADED (it is up).
func Derive(v View, failAfter int) (Status, string) {
	st, msg, _ := assess(v, failAfter)
	return st, msg
}

// Explain is the cause of what Derive reports, when something is wrong (Kind "" when not).
func Explain(v View, failAfter int) Cause {
	_, _, c := assess(v, failAfter)
	return c
}

// assess is Derive with the cause of a failure or a retry.
func assess(v View, failAfter int) (Status, string, Cause) {
	p := Measure(v)
	if v.Deleting {
		if left := len(v.Machines); left > 0 {
			return StatusStopping, fmt.Sprintf("deleting: releasing %d machine(s)%s", left, retrying(v)), retryCause(v, "releasing its machines")
		}
		return StatusStopping, "deleting: every machine is released", Cause{}
	}
	upgrading := v.Version != v.TargetVersion
	for _, m := range p.Failed {
		switch {
		case upgrading:
			next := fmt.Sprintf("Scale pool %s down (failed machines are released first) to let the upgrade finish, or delete the cluster.", m.Pool)
			if m.Role == RoleControlPlane {
				next = "A control-plane machine is not replaced: delete the cluster and create it again."
			}
			return StatusError, fmt.Sprintf("upgrade from %s to %s stopped: machine %s failed: %s", v.Version, v.TargetVersion, m.Name, m.Message),
				Cause{Kind: CauseUpgradeFailed, Machine: m.Name, NextStep: next,
					Summary: fmt.Sprintf("The upgrade from %s to %s stopped: machine %s failed at the %s provider.", v.Version, v.TargetVersion, m.Name, v.Provider)}
		case m.Role == RoleControlPlane:
			return StatusError, fmt.Sprintf("control-plane machine %s failed: %s", m.Name, m.Message),
				Cause{Kind: CauseControlPlaneFailed, Machine: m.Name,
					Summary:  fmt.Sprintf("Control-plane machine %s failed at the %s provider.", m.Name, v.Provider),
					NextStep: "A control-plane machine is not replaced: delete the cluster and create it again; the machine's details say what failed."}
		}
	}
	if len(p.Failed) > 0 {
		m := p.Failed[0]
		others := ""
		if n := len(p.Failed) - 1; n > 0 {
			others = fmt.Sprintf(" (%d more failed)", n)
		}
		return StatusDegraded, fmt.Sprintf("worker machine %s of pool %s failed: %s%s", m.Name, m.Pool, m.Message, more(len(p.Failed)-1, "failed machine")),
			Cause{Kind: CauseWorkerFailed, Machine: m.Name,
				Summary:  fmt.Sprintf("Worker machine %s of pool %s failed at the %s provider%s.", m.Name, m.Pool, v.Provider, others),
				NextStep: fmt.Sprintf("Scale pool %s down (failed machines are released first) and up again to replace it, or delete the pool.", m.Pool)}
	}
	if failAfter > 0 && v.Attempts >= failAfter {
		msg := fmt.Sprintf("cannot reach the %s provider after %d attempts (still retrying): %s", v.Provider, v.Attempts, v.LastError)
		c := Cause{Kind: CauseProviderUnreachable,
			Summary:  fmt.Sprintf("kaas cannot reach the %s provider (%d attempts in a row); it keeps retrying.", v.Provider, v.Attempts),
			NextStep: providerCheck(v.Provider)}
		if !p.ControlPlaneReady {
			return StatusError, msg, c
		}
		return StatusDegraded, msg, c
	}
	switch {
	case !v.ReadyOnce:
		return StatusProvisioning, fmt.Sprintf("%d of %d machines ready%s%s", p.Ready, p.Desired, waiting(p), retrying(v)), retryCause(v, "provisioning")
	case upgrading:
		return StatusReconciling, fmt.Sprintf("upgrading from %s to %s: %d of %d machines upgraded%s%s",
			v.Version, v.TargetVersion, p.Upgraded, p.Desired, waiting(p), retrying(v)), retryCause(v, "upgrading")
	case p.DeletingPool != nil:
		return StatusReconciling, fmt.Sprintf("deleting node pool %s%s", p.DeletingPool.Name, retrying(v)), retryCause(v, "deleting a node pool")
	case p.Scaling != nil:
		return StatusReconciling, fmt.Sprintf("scaling node pool %s to %d machines%s%s", p.Scaling.Name, p.Scaling.Count, waiting(p), retrying(v)), retryCause(v, "scaling")
	case p.Leaving > 0:
		return StatusReconciling, fmt.Sprintf("releasing %d machine(s)%s", p.Leaving, retrying(v)), retryCause(v, "releasing machines")
	case p.Waiting != nil:
		return StatusReconciling, fmt.Sprintf("%d of %d machines ready%s%s", p.Ready, p.Desired, waiting(p), retrying(v)), retryCause(v, "provisioning")
	}
	return StatusRunning, fmt.Sprintf("all %d machines ready, Kubernetes %s", p.Ready, v.Version), Cause{}
}

// retryCause is the cause of a cluster whose reconciler passes failed (and are retried)
// while doing what; none when the last pass succeeded.
func retryCause(v View, doing string) Cause {
	if v.Attempts == 0 {
		return Cause{}
	}
	return Cause{Kind: CauseRetrying,
		Summary:  fmt.Sprintf("A step failed %d time(s) in a row while %s; kaas retries with backoff.", v.Attempts, doing),
		NextStep: "Nothing to do if the next attempt passes; if it keeps failing, the details say why. " + providerCheck(v.Provider)}
}

// providerCheck says what to look at when a provider cannot be reached.
func providerCheck(provider string) string {
	switch provider {
	case "vagrant":
		return "Check that vagrant-server is up and a runner is online (Vagrant page)."
	case "maas":
		return "Check the MAAS region's address and API key in kaas's configuration (PLINTH_KAAS_MAAS_URL, PLINTH_KAAS_MAAS_API_KEY)."
	}
	return "Check that the " + provider + " provider is up."
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
