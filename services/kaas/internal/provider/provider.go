// Package provider defines where kaas's machines come from. A provider allocates, deploys,
// bootstraps, upgrades and releases machines; the reconciler calls it again and again until
// each machine is where it should be, so every method is idempotent, returns within a bounded
// time, and hands back its own progress (Observation.State) for kaas to keep across passes
// and restarts. Implementations: maas (a MAAS 2.0 region over its REST API) and vagrant (the
// suite's vagrant-server and its runners).
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
)

// Phase is where a machine stands at its provider.
type Phase int

// The phases.
const (
	// Pending: still being allocated, deployed, bootstrapped or upgraded; call again.
	Pending Phase = iota
	// Ready: deployed and running its bootstrap (or upgrade) to completion.
	Ready
	// Failed: deployment, bootstrap or upgrade failed; Message says why. Final.
	Failed
	// Gone: released, or never existed.
	Gone
)

func (p Phase) String() string {
	return [...]string{"pending", "ready", "failed", "gone"}[p]
}

// Machine is what a provider is told about one machine.
type Machine struct {
	ClusterUID   string // unique per cluster, also across clusters that reused a name
	Cluster      string
	Pool         string
	Name         string // the node name
	Role         cluster.Role
	InstanceType string
	ProviderID   string // empty before the provider named it
	State        []byte // the provider's progress from the last call, nil at first
}

// Peer is a control-plane machine that is up.
type Peer struct {
	Name    string
	Address string
}

// Bootstrap is what a machine must run: which Kubernetes, in which role, joined to what.
type Bootstrap struct {
	Version string
	// Init marks the first control-plane machine: it creates the cluster.
	Init bool
	// Endpoint is the API server address machines join (host:port); empty for Init.
	Endpoint string
	// ControlPlane lists the control-plane machines that are up, oldest first.
	ControlPlane []Peer
	// ControlPlaneSize is the number of control-plane machines the cluster has.
	ControlPlaneSize int
	// Labels go on the machine's Kubernetes node.
	Labels map[string]string
	// Taints go on the node, "key=value:Effect".
	Taints []string
	PKI    *pki.Cluster
}

// Observation is a provider's answer.
type Observation struct {
	Phase      Phase
	ProviderID string
	Hostname   string
	Addresses  []string
	// Status is the provider's own word for the machine ("Deployed", "running").
	Status string
	// Message says what the machine waits for, or why it failed.
	Message string
	// State is the provider's progress, handed back on the next call.
	State []byte
}

// Provider supplies machines. Errors mean the provider could not be asked (unreachable,
// refused the request): the reconciler retries with backoff and reports them in the
// cluster's status. A machine that fails is an Observation with Phase Failed, not an error.
type Provider interface {
	// Name is the provider's name, as clusters record it ("maas", "vagrant").
	Name() string
	// Provision moves m toward a deployed machine running b.
	Provision(ctx context.Context, m Machine, b Bootstrap) (Observation, error)
	// Upgrade moves a ready machine to b.Version; Ready once it runs it.
	Upgrade(ctx context.Context, m Machine, b Bootstrap) (Observation, error)
	// Release gives m back; Gone once it is.
	Release(ctx context.Context, m Machine) (Observation, error)
	// Observe reports m as the provider sees it now, changing nothing.
	Observe(ctx context.Context, m Machine) (Observation, error)
}

// Checker is a Provider whose machines need something on hand before they can be built
// (binaries on the host, for the vagrant provider). The cluster service asks before it
// accepts a cluster, an upgrade or new machines, so a request that cannot succeed is refused
// at once instead of failing minutes later.
type Checker interface {
	// Preflight returns nil when machines running version can be provisioned now or will be
	// once a preparation under way ends; otherwise an error saying, in one line, what is
	// missing and how to get it.
	Preflight(version string) error
}

// Registry holds the configured providers by name.
type Registry struct {
	byName map[string]Provider
	def    string
}

// NewRegistry holds providers; def names the one new clusters use.
func NewRegistry(def string, providers ...Provider) (*Registry, error) {
	r := &Registry{byName: map[string]Provider{}, def: def}
	for _, p := range providers {
		if _, dup := r.byName[p.Name()]; dup {
			return nil, fmt.Errorf("provider %s is configured twice", p.Name())
		}
		r.byName[p.Name()] = p
	}
	if _, ok := r.byName[def]; !ok {
		return nil, fmt.Errorf("the default provider %q is not configured (configured: %v)", def, r.Names())
	}
	return r, nil
}

// Default is the name of the provider new clusters use.
func (r *Registry) Default() string { return r.def }

// Get returns the provider called name.
func (r *Registry) Get(name string) (Provider, error) {
	p, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (configured: %v)", ErrNotConfigured, name, r.Names())
	}
	return p, nil
}

// Preflight asks provider name whether it can provision machines running version (see
// Checker); providers that need nothing, and names not configured (the reconciler reports
// those), pass.
func (r *Registry) Preflight(name, version string) error {
	if c, ok := r.byName[name].(Checker); ok {
		return c.Preflight(version)
	}
	return nil
}

// JobReporter is a provider whose machines are built by jobs whose output can be read (vagrant).
type JobReporter interface {
	// JobOf is the job that last worked on the machine whose progress is state ("" if none).
	JobOf(state []byte) string
}

// JobOf is the job provider name's progress state names ("" for providers without jobs).
func (r *Registry) JobOf(name string, state []byte) string {
	if j, ok := r.byName[name].(JobReporter); ok {
		return j.JobOf(state)
	}
	return ""
}

// Names lists the configured providers.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrNotConfigured: a cluster names a provider this kaas was not configured with.
var ErrNotConfigured = errors.New("provider not configured")

// ReadState decodes a provider's progress from Machine.State (JSON, as WriteState made it).
// kaas stored it; one that cannot be read is the zero value, and the provider starts over
// with steps that are idempotent anyway.
func ReadState[T any](b []byte) T {
	var v T
	if len(b) > 0 {
		_ = json.Unmarshal(b, &v)
	}
	return v
}

// WriteState encodes a provider's progress for Observation.State.
func WriteState(v any) []byte {
	b, _ := json.Marshal(v) // plain structs of strings: cannot fail
	return b
}
