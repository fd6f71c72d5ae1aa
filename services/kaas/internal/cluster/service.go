package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Store keeps clusters. It persists and decides nothing: Create writes the Change New
// made; Update loads the cluster under a lock, passes it to update and writes exactly the
// Change update returns — the view and its events (outbox) — in that transaction, waking
// the reconciler; an error from update saves nothing.
//
// Quotas are counted per owner (Cluster.Owner.ID) under a lock of that owner held until
// the write commits, so two requests of one owner cannot both pass a limit only one fits:
// Create passes admit what the new cluster's owner's clusters hold (Usage) and writes c
// only when admit returns nil (a nil admit admits everything); UpdateOwned is Update that
// also passes update what the owner's other clusters hold. The count leaves out clusters
// being deleted and pools being deleted, as Machines does.
type Store interface {
	Create(ctx context.Context, c Change, secrets []byte, admit func(Usage) error) (View, error)
	UpdateOwned(ctx context.Context, name string, update func(View, Usage) (Change, error)) (View, error)
	Get(ctx context.Context, name string) (View, error)
	Secrets(ctx context.Context, name string) ([]byte, error)
	// Detail is the cluster's own row with its sealed key material, in one read.
	Detail(ctx context.Context, name string) (Cluster, []byte, error)
	List(ctx context.Context) ([]Cluster, error)
	Update(ctx context.Context, name string, update func(View) (Change, error)) (View, error)
}

// Credentials makes a cluster's key material (sealed, as the store keeps it) and, from it, a
// kubeconfig for a caller: what it may do in the cluster follows from its role; nil when the
// role gets none.
type Credentials interface {
	New(cluster string) (sealed []byte, err error)
	Kubeconfig(sealed []byte, cluster, endpoint string, who Caller) ([]byte, error)
}

// Caller is the verified user a request comes from.
type Caller struct {
	ID, Name string
	Role     authz.Role
	// Expires is when the caller's token ends (zero: not known).
	Expires time.Time
}

// NodeStatus is a machine as its provider and its cluster's API server see it now.
type NodeStatus struct {
	Machine
	// K8sStatus is the node's readiness ("Ready", "NotReady"...), K8sVersion its kubelet's
	// version; "unknown" when the cluster's API cannot be asked.
	K8sStatus, K8sVersion string
}

// Inspector asks providers and the cluster's API server about its machines.
type Inspector interface {
	Inspect(ctx context.Context, v View, sealed []byte) ([]NodeStatus, error)
}

// Prerequisites tells whether a provider can build machines running a version.
type Prerequisites interface {
	// Preflight returns nil when provider can provision machines running version now, or
	// once a preparation under way ends; otherwise an error saying what is missing.
	Preflight(provider, version string) error
}

// Service carries out the API's requests on the store; the reconciler does the work.
type Service struct {
	store     Store
	rules     Rules
	creds     Credentials
	inspector Inspector
	prereqs   Prerequisites
	provider  string
}

// NewService serves clusters whose new machines come from provider. Requests that would
// need machines a provider cannot build (prereqs) are refused before anything is recorded.
func NewService(store Store, rules Rules, creds Credentials, inspector Inspector, prereqs Prerequisites, provider string) (*Service, error) {
	if err := rules.Validate(); err != nil {
		return nil, err
	}
	return &Service{store: store, rules: rules, creds: creds, inspector: inspector, prereqs: prereqs, provider: provider}, nil
}

// preflight refuses a request whose new machines, running version, provider cannot build.
func (s *Service) preflight(provider, version string) error {
	if err := s.prereqs.Preflight(provider, version); err != nil {
		return &UnmetError{Reason: fmt.Sprintf("the %s provider cannot build Kubernetes %s machines here: %v", provider, version, err)}
	}
	return nil
}

// NodesStatus returns the cluster and the status of each of its machines.
func (s *Service) NodesStatus(ctx context.Context, name string) (View, []NodeStatus, error) {
	if err := ValidName("clusterName", name); err != nil {
		return View{}, nil, err
	}
	v, err := s.store.Get(ctx, name)
	if err != nil {
		return View{}, nil, err
	}
	sealed, err := s.store.Secrets(ctx, name)
	if err != nil {
		return View{}, nil, err
	}
	nodes, err := s.inspector.Inspect(ctx, v, sealed)
	return v, nodes, err
}

// Rules are the limits requests are checked against.
func (s *Service) Rules() Rules { return s.rules }

// Create validates and records a new cluster with its key material, owned by who unless
// that would take who beyond the quota; the reconciler provisions it.
func (s *Service) Create(ctx context.Context, spec CreateSpec, who Caller) (View, error) {
	pools, v, err := s.rules.Create(spec)
	if err != nil {
		return View{}, err
	}
	if err := s.preflight(s.provider, v.String()); err != nil {
		return View{}, err
	}
	sealed, err := s.creds.New(spec.Name)
	if err != nil {
		return View{}, fmt.Errorf("make the cluster's key material: %w", err)
	}
	c := Cluster{UID: uuid.NewString(), Name: spec.Name, Owner: Owner{ID: who.ID, Name: who.Name}, Provider: s.provider,
		Version: v.String(), TargetVersion: v.String()}
	change := New(c, pools, s.rules.FailAfter)
	return s.store.Create(ctx, change, sealed, func(held Usage) error { return s.rules.Quota.AdmitNew(change.View, held) })
}

// Get returns a cluster with its pools and machines.
func (s *Service) Get(ctx context.Context, name string) (View, error) {
	if err := ValidName("name", name); err != nil {
		return View{}, err
	}
	return s.store.Get(ctx, name)
}

// Info returns a cluster with its pools and machines and, when something is wrong with it,
// the cause (Explain).
func (s *Service) Info(ctx context.Context, name string) (View, Cause, error) {
	v, err := s.Get(ctx, name)
	if err != nil {
		return View{}, Cause{}, err
	}
	return v, Explain(v, s.rules.FailAfter), nil
}

// Detail returns a cluster and, once its API endpoint is known, a kubeconfig for who (nil
// before, and for a caller whose role gets none).
func (s *Service) Detail(ctx context.Context, name string, who Caller) (Cluster, []byte, error) {
	if err := ValidName("name", name); err != nil {
		return Cluster{}, nil, err
	}
	c, sealed, err := s.store.Detail(ctx, name)
	if err != nil || c.Endpoint == "" {
		return c, nil, err
	}
	kc, err := s.creds.Kubeconfig(sealed, c.Name, c.Endpoint, who)
	return c, kc, err
}

// List returns every cluster, by name.
func (s *Service) List(ctx context.Context) ([]Cluster, error) { return s.store.List(ctx) }

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

// Delete starts deleting a cluster; already reports a deletion that was under way.
func (s *Service) Delete(ctx context.Context, name string) (v View, already bool, err error) {
	if err := ValidName("name", name); err != nil {
		return View{}, false, err
	}
	v, err = s.update(ctx, name, func(v *View) error {
		already = v.Deleting
		v.Deleting = true
		return nil
	})
	return v, already, err
}

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
	if err := ValidName("clusterName", name); err != nil {
		return err
	}
	if len(pools) == 0 {
		return input.Invalid("node_pool_names", "name at least one node pool to delete")
	}
	if len(pools) > MaxPools {
		return input.Invalid("node_pool_names", "has %d names; a cluster has at most %d pools", len(pools), MaxPools)
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
	if err := ValidName("clusterName", name); err != nil {
		return err
	}
	if len(specs) == 0 {
		return input.Invalid("node_pools", "name at least one node pool to scale")
	}
	if len(specs) > MaxPools {
		return input.Invalid("node_pools", "has %d entries; a cluster has at most %d pools", len(specs), MaxPools)
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

// UpgradeOptions lists the versions the cluster may be upgraded to now.
func (s *Service) UpgradeOptions(ctx context.Context, name string) ([]Version, error) {
	v, err := s.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if v.Deleting || v.Version != v.TargetVersion {
		return nil, nil // nothing may start now; the reply says ok=false
	}
	cur, err := ParseVersion(v.Version)
	if err != nil {
		return nil, fmt.Errorf("stored version of cluster %q: %w", v.Name, err)
	}
	return s.rules.Catalog.UpgradesFrom(cur), nil
}

// Upgrade starts a rolling upgrade to version.
func (s *Service) Upgrade(ctx context.Context, name, version string) error {
	if err := ValidName("name", name); err != nil {
		return err
	}
	if err := input.Required("version", version, 32); err != nil {
		return err
	}
	target, err := s.rules.Version("version", version)
	if err != nil {
		return err
	}
	_, err = s.update(ctx, name, func(v *View) error {
		if err := mutable(v); err != nil {
			return err
		}
		switch {
		case v.TargetVersion == target.String() && v.Version != v.TargetVersion:
			return nil // the same upgrade again: already under way
		case v.Version != v.TargetVersion:
			return conflict("cluster %q is being upgraded to %s; wait until it finishes", v.Name, v.TargetVersion)
		case !v.ReadyOnce:
			return conflict("cluster %q is still being created; upgrade it once it is RUNNING", v.Name)
		case v.Version == target.String():
			return conflict("cluster %q already runs %s", v.Name, target)
		}
		for _, m := range v.Machines {
			if m.State == MachineFailed && !m.Release {
				return conflict("machine %s of cluster %q failed; scale it away or delete its pool before upgrading", m.Name, v.Name)
			}
		}
		cur, err := ParseVersion(v.Version)
		if err != nil {
			return fmt.Errorf("stored version of cluster %q: %w", v.Name, err)
		}
		allowed := s.rules.Catalog.UpgradesFrom(cur)
		if !slices.Contains(allowed, target) {
			return conflict("cluster %q cannot move from %s to %s: Kubernetes upgrades go to a newer patch or the next minor version (possible now: %s)",
				v.Name, cur, target, listOrNone(allowed))
		}
		if err := s.preflight(v.Provider, target.String()); err != nil {
			return err
		}
		v.TargetVersion = target.String()
		return nil
	})
	return err
}

func listOrNone(vs []Version) string {
	if len(vs) == 0 {
		return "none"
	}
	c := Catalog{versions: vs}
	return c.String()
}

// mutable refuses changes to a cluster being deleted.
func mutable(v *View) error {
	if v.Deleting {
		return conflict("cluster %q is being deleted", v.Name)
	}
	return nil
}

// IsNotFound reports a missing cluster or pool.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// NotFound is the error a store returns for a missing cluster.
func NotFound(name string) error { return clusterNotFound(name) }

// ClusterExists is the error a store returns when the name is taken.
func ClusterExists(name string) error { return &ExistsError{What: fmt.Sprintf("cluster %q", name)} }
