// Package inspect answers GetClusterNodesStatus from real sources: each machine's provider
// (status, system id, hostname, addresses) and the cluster's own API server (node readiness
// and version) when it is reachable — "unknown" when it is not.
package inspect

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
	"github.com/plinth-dev/plinth/services/kaas/internal/kube"
	"github.com/plinth-dev/plinth/services/kaas/internal/pki"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider"
)

// maxParallel bounds the provider calls of one inspection.
const maxParallel = 8

// Inspector asks providers and clusters.
type Inspector struct {
	providers *provider.Registry
	vault     *pki.Vault
	timeout   time.Duration
	log       *slog.Logger
}

// New asks within timeout per request.
func New(providers *provider.Registry, vault *pki.Vault, timeout time.Duration, log *slog.Logger) *Inspector {
	return &Inspector{providers: providers, vault: vault, timeout: timeout, log: log}
}

// Inspect returns the status of every machine of v; sealed is its key material. A provider
// that does not answer in time leaves the machine as kaas last saw it.
func (i *Inspector) Inspect(ctx context.Context, v cluster.View, sealed []byte) ([]cluster.NodeStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, i.timeout)
	defer cancel()
	out := make([]cluster.NodeStatus, len(v.Machines))
	for j, m := range v.Machines {
		out[j] = cluster.NodeStatus{Machine: m, K8sStatus: kube.Unknown, K8sVersion: kube.Unknown}
	}
	var wg sync.WaitGroup
	// Bounded: one call must not turn into a burst of hundreds of requests to the provider.
	sem := make(chan struct{}, maxParallel)
	if p, err := i.providers.Get(v.Provider); err == nil {
		for j := range out {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done():
					return
				}
				m := &out[j].Machine
				o, err := p.Observe(ctx, provider.Machine{ClusterUID: v.UID, Cluster: v.Name, Pool: m.Pool, Name: m.Name,
					Role: m.Role, ProviderID: m.ProviderID, State: m.ProviderState})
				if err != nil {
					i.log.DebugContext(ctx, "provider did not answer; using the last known machine state", "machine", m.Name, "error", err)
					return
				}
				if o.ProviderID != "" {
					m.ProviderID = o.ProviderID
				}
				if o.Hostname != "" {
					m.Hostname = o.Hostname
				}
				if len(o.Addresses) > 0 {
					m.Addresses = o.Addresses
				}
				if o.Status != "" {
					m.ProviderStatus = o.Status
				}
			}()
		}
	}
	var nodes map[string]kube.Node
	if v.Endpoint != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes = i.nodes(ctx, v, sealed)
		}()
	}
	wg.Wait()
	if nodes != nil {
		for j := range out {
			n, ok := nodes[out[j].Name]
			if !ok {
				out[j].K8sStatus = kube.NotRegistered
				continue
			}
			out[j].K8sStatus, out[j].K8sVersion = n.Status, n.Version
		}
	}
	return out, nil
}

// nodes reads the cluster's nodes, or nil when its API cannot be reached.
func (i *Inspector) nodes(ctx context.Context, v cluster.View, sealed []byte) map[string]kube.Node {
	keys, err := i.vault.Open(sealed, v.Name)
	if err != nil {
		i.log.WarnContext(ctx, "cannot open the cluster's key material", "cluster", v.Name, "error", err)
		return nil
	}
	c, err := kube.Connect(keys, v.Name, v.Endpoint, i.timeout)
	if err != nil {
		return nil
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		i.log.DebugContext(ctx, "the cluster's API server is not reachable", "cluster", v.Name, "error", err)
		return nil
	}
	return nodes
}
