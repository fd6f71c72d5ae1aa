package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
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

// IsNotFound reports a missing cluster or pool.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// NotFound is the error a store returns for a missing cluster.
func NotFound(name string) error { return clusterNotFound(name) }

// ClusterExists is the error a store returns when the name is taken.
func ClusterExists(name string) error { return &ExistsError{What: fmt.Sprintf("cluster %q", name)} }
