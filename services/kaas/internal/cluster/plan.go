package cluster

import "slices"

// Plan decides which machines to add and which to give back so that v's machines match its
// pools: missing machines are added (state provisioning, named by the pool's next ordinals),
// surplus ones marked for release (failed first, then newest), every machine of a pool being
// deleted — or of a cluster being deleted — marked too, and pools being deleted whose machines
// are all gone removed. It only changes v; the reconciler saves it before acting, so the
// decision survives a restart.
func Plan(v *View) {
	for i := range v.Machines {
		if v.Deleting {
			v.Machines[i].Release = true
		}
	}
	if v.Deleting {
		return
	}
	for i := range v.Pools {
		pool := &v.Pools[i]
		live := v.MachinesOf(pool.Name)
		switch {
		case pool.Deleting:
			for j := range v.Machines {
				if v.Machines[j].Pool == pool.Name {
					v.Machines[j].Release = true
				}
			}
		case len(live) < pool.Count:
			version := v.newMachineVersion()
			for range pool.Count - len(live) {
				v.Machines = append(v.Machines, Machine{Pool: pool.Name, Name: MachineName(v.Name, pool.Name, pool.NextOrdinal),
					Ordinal: pool.NextOrdinal, Role: pool.Role, State: MachineProvisioning, Version: version})
				pool.NextOrdinal++
			}
		case len(live) > pool.Count:
			for _, victim := range ScaleDownOrder(live)[:len(live)-pool.Count] {
				for j := range v.Machines {
					if v.Machines[j].ID == victim.ID && v.Machines[j].Name == victim.Name {
						v.Machines[j].Release = true
					}
				}
			}
		}
	}
	v.Pools = slices.DeleteFunc(v.Pools, func(p Pool) bool {
		return p.Deleting && !slices.ContainsFunc(v.Machines, func(m Machine) bool { return m.Pool == p.Name })
	})
}

// newMachineVersion is the version a new machine gets: the target version once the whole
// control plane runs it (during an upgrade), else the cluster's version, so no node is ever
// newer than the control plane.
func (v *View) newMachineVersion() string {
	if v.Version == v.TargetVersion {
		return v.Version
	}
	for _, m := range v.Machines {
		if m.Role == RoleControlPlane && !m.Release && (m.Version != v.TargetVersion || m.State != MachineReady) {
			return v.Version
		}
	}
	return v.TargetVersion
}

// ControlPlane returns the control-plane machines not marked for release, oldest first.
func (v *View) ControlPlane() []Machine {
	ms := v.MachinesOf(ControlPlanePool)
	slices.SortFunc(ms, func(a, b Machine) int { return a.Ordinal - b.Ordinal })
	return ms
}

// UpgradeOrder lists the machines an upgrade walks through, one at a time: the control
// plane first, oldest first, then each pool's workers in pool order, oldest first.
func (v *View) UpgradeOrder() []Machine {
	out := v.ControlPlane()
	for _, p := range v.Pools {
		if p.Role != RoleWorker {
			continue
		}
		ws := v.MachinesOf(p.Name)
		slices.SortFunc(ws, func(a, b Machine) int { return a.Ordinal - b.Ordinal })
		out = append(out, ws...)
	}
	return out
}
