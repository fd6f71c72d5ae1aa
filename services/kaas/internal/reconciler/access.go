package reconciler

import (
	"context"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/access"
	"github.com/plinth-dev/plinth/services/kaas/internal/kube"
)

// grants remembers, per cluster API server, when its RBAC bindings for Plinth's roles are
// next to be made: never again once made (by this process), Resync after a failure.
type grants struct {
	mu   sync.Mutex
	next map[string]time.Time
}

// due reports whether key's bindings are to be made now.
func (g *grants) due(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	next, ok := g.next[key]
	return !ok || !now.Before(next)
}

// set records when key is next due (the zero time: forget it).
func (g *grants) set(key string, next time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next == nil {
		g.next = map[string]time.Time{}
	}
	if next.IsZero() {
		delete(g.next, key)
		return
	}
	g.next[key] = next
}

// grantAccess gives Plinth's roles their rights in the cluster (access.Ensure: the bindings
// of the groups GetCluster's certificates are in) once its first API server is up — for new
// clusters right after it is, for clusters made before kaas issued per-role kubeconfigs at
// the first pass after kaas starts. Until then those certificates can do nothing: it fails
// closed. A failure is logged and tried again after Resync; it is not a provider failure
// and does not change the cluster's status.
func (p *pass) grantAccess(ctx context.Context) {
	v := p.current()
	key := v.UID + "@" + v.Endpoint
	if v.Deleting {
		p.r.grants.set(key, time.Time{})
		return
	}
	if v.Endpoint == "" || !p.r.grants.due(key, time.Now()) {
		return
	}
	c, err := kube.Connect(p.keys, v.Name, v.Endpoint, 5*time.Second)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = access.Ensure(cctx, c)
		cancel()
	}
	if err != nil {
		p.log.Warn("could not bind Plinth's roles in the cluster; trying again later", "error", err, "retry_in", p.r.o.Resync)
		p.r.grants.set(key, time.Now().Add(p.r.o.Resync))
		return
	}
	p.log.Info("Plinth's roles are bound in the cluster", "bindings", len(access.Bindings()))
	p.r.grants.set(key, time.Now().Add(100*365*24*time.Hour))
}
