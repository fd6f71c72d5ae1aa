package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// AddPools adds worker pools, all or none, within the owner's machine quota.
func (s *Service) AddPools(ctx context.Context, name string, specs []PoolSpec) error {
	if err := ValidName("clusterName", name); err != nil {
		return err
	}
	if len(specs) == 0 {
		return input.Invalid("worker_node_pools", "name at least one node pool to add")
	}
	if _, err := s.rules.WorkerPools("worker_node_pools", specs, nil); err != nil {
		return err
	}
	_, err := s.grow(ctx, name, func(v *View) error {
		if err := mutable(v); err != nil {
			return err
		}
		var existing []string
		for _, p := range v.Pools {
			if p.Role == RoleWorker {
				existing = append(existing, p.Name)
			}
		}
		pools, err := s.rules.WorkerPools("worker_node_pools", specs, existing)
		if err != nil {
			return err
		}
		adds := false
		for _, p := range pools {
			if old, ok := v.Pool(p.Name); ok {
				if old.Deleting {
					return conflict("node pool %q of cluster %q is still being deleted; add it again once it is gone", p.Name, v.Name)
				}
				return &ExistsError{What: fmt.Sprintf("node pool %q in cluster %q", p.Name, v.Name)}
			}
			adds = adds || p.Count > 0
		}
		if adds {
			if err := s.preflight(v.Provider, v.newMachineVersion()); err != nil {
				return err
			}
		}
		v.Pools = append(v.Pools, pools...)
		return nil
	})
	return err
}

// DeletePools deletes worker pools: all of them, or none when one is missing.
func (s *Service) DeletePools(ctx context.Context, name string, pools []string) error {
	if err := poolRequest(name, "node_pool_names", len(pools), "names", "delete"); err != nil {
		return err
	}
	for i, p := range pools {
		f := "node_pool_names[" + strconv.Itoa(i) + "]"
		if err := ValidName(f, p); err != nil {
			return err
		}
		if p == ControlPlanePool {
			return input.Invalid(f, "the control plane is not a node pool; delete the cluster instead")
		}
	}
	_, err := s.update(ctx, name, func(v *View) error {
		if err := mutable(v); err != nil {
			return err
		}
		for _, p := range pools {
			if _, ok := v.Pool(p); !ok {
				return &NotFoundError{What: fmt.Sprintf("node pool %q in cluster %q", p, v.Name)}
			}
		}
		for _, p := range pools {
			pool, _ := v.Pool(p)
			pool.Deleting = true
		}
		return nil
	})
	return err
}

// ScaleSpec is one pool's new machine count.
type ScaleSpec struct {
	Name  string
	Count int
}

// Scale sets the machine counts of worker pools, all or none; a scale-up within the owner's
// machine quota.
func (s *Service) Scale(ctx context.Context, name string, specs []ScaleSpec) error {
	if err := poolRequest(name, "node_pools", len(specs), "entries", "scale"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, sp := range specs {
		f := "node_pools[" + strconv.Itoa(i) + "]"
		if err := ValidName(f+".name", sp.Name); err != nil {
			return err
		}
		if sp.Name == ControlPlanePool {
			return input.Invalid(f+".name", "the control plane's size is fixed when the cluster is created")
		}
		if seen[sp.Name] {
			return input.Invalid(f+".name", "%q is given twice", sp.Name)
		}
		seen[sp.Name] = true
		if err := s.rules.PoolCount(f+".count", sp.Count); err != nil {
			return err
		}
	}
	_, err := s.grow(ctx, name, func(v *View) error {
		if err := mutable(v); err != nil {
			return err
		}
		for _, sp := range specs {
			pool, ok := v.Pool(sp.Name)
			if !ok {
				return &NotFoundError{What: fmt.Sprintf("node pool %q in cluster %q", sp.Name, v.Name)}
			}
			if pool.Deleting {
				return conflict("node pool %q of cluster %q is being deleted", sp.Name, v.Name)
			}
			if sp.Count > pool.Count {
				if err := s.preflight(v.Provider, v.newMachineVersion()); err != nil {
					return err
				}
			}
		}
		for _, sp := range specs {
			pool, _ := v.Pool(sp.Name)
			pool.Count = sp.Count
		}
		return nil
	})
	return err
}

// WorkerPools checks worker pools of a request (field names them); existing are the pool
// names the cluster has already, which new pools may not repeat (that is the caller's
// AlreadyExists; here only duplicates within the request are refused).
func (r Rules) WorkerPools(field string, specs []PoolSpec, existing []string) ([]Pool, error) {
	if len(specs)+len(existing) > MaxPools-1 && len(specs) > 0 {
		return nil, input.Invalid(field, "has %d pools; a cluster has at most %d worker pools", len(specs)+len(existing), MaxPools-1)
	}
	pools := make([]Pool, 0, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := ValidName(f+".name", s.Name); err != nil {
			return nil, err
		}
		if s.Name == ControlPlanePool {
			return nil, input.Invalid(f+".name", "%q is reserved for the control plane", ControlPlanePool)
		}
		if seen[s.Name] {
			return nil, input.Invalid(f+".name", "%q is used twice in this request", s.Name)
		}
		seen[s.Name] = true
		if err := r.PoolCount(f+".count", s.Count); err != nil {
			return nil, err
		}
		p, err := r.pool(f, s, RoleWorker)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

// PoolCount checks a worker pool's machine count.
func (r Rules) PoolCount(field string, n int) error {
	if n < 0 || n > r.MaxPoolSize {
		return input.Invalid(field, "is %d; a pool has 0 to %d machines", n, r.MaxPoolSize)
	}
	return nil
}

// poolRequest checks what DeletePools and Scale are given before anything else: a cluster
// name, and from one to MaxPools entries (the unit: names, entries) in field, the pools to
// do what the request does (doing).
func poolRequest(name, field string, n int, unit, doing string) error {
	if err := ValidName("clusterName", name); err != nil {
		return err
	}
	if n == 0 {
		return input.Invalid(field, "name at least one node pool to %s", doing)
	}
	if n > MaxPools {
		return input.Invalid(field, "has %d %s; a cluster has at most %d pools", n, unit, MaxPools)
	}
	return nil
}
