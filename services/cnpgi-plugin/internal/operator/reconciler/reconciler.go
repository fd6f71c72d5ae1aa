// Package reconciler decides, before and after CloudNativePG reconciles a Cluster or a Backup
// that uses the plugin (CNPG-I ReconcilerHooks), whether the reconciliation may go on: not
// while the object store it archives to, or backs up to, is missing or unreachable, since
// everything the operator would start next (instances archiving WAL, a backup) would fail.
package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// Stores resolves a cluster's store parameters; *stores.Registry provides it.
type Stores interface {
	Lookup(ctx context.Context, namespace, barmanObject, name string) (*stores.Named, error)
}

// Access grants a Cluster's instances what they read of the ObjectStores they use;
// *kube.ObjectStores provides it.
type Access interface {
	GrantInstances(ctx context.Context, namespace, cluster, uid string, objectStores []string) error
}

// Decision is the answer to one hook call.
type Decision struct {
	// Requeue stops this reconciliation; the operator retries after RequeueAfter.
	Requeue      bool
	RequeueAfter time.Duration
	// Reason says why, for the log.
	Reason string
}

// Options tune a Gate.
type Options struct {
	// RequeueAfter is how long the operator waits before retrying a blocked reconciliation
	// (default 30s).
	RequeueAfter time.Duration
	// ProbeTimeout bounds one reachability check (default 5s; the operator gives the whole
	// call 30s).
	ProbeTimeout time.Duration
	// Logger receives why a reconciliation is held back.
	Logger *slog.Logger
	// Access, when set, grants the instances of Clusters that use ObjectStore resources
	// their Role before a reconciliation goes on (Prepare).
	Access Access
}

// Gate checks the store behind a reconciliation.
type Gate struct {
	plugin string
	stores Stores
	opts   Options
}

// NewGate returns a Gate for clusters and backups that use plugin.
func NewGate(plugin string, stores Stores, o Options) *Gate {
	if o.RequeueAfter <= 0 {
		o.RequeueAfter = 30 * time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Gate{plugin: plugin, stores: stores, opts: o}
}

// resource is the part of the reconciled object the gate reads: a Cluster or a Backup.
type resource struct {
	Kind string `json:"kind"`
	Spec struct {
		Method              string          `json:"method"`
		PluginConfiguration *cluster.Plugin `json:"pluginConfiguration"`
	} `json:"spec"`
}

// Check decides for one reconciliation of clusterDef's Cluster, or of resourceDef when it is
// one of the Cluster's Backups. Clusters being deleted, and objects that do not use the plugin,
// always continue.
func (g *Gate) Check(ctx context.Context, clusterDef, resourceDef []byte) (Decision, error) {
	c, err := cluster.Parse(clusterDef)
	if err != nil {
		return Decision{}, err
	}
	if c.Metadata.DeletionTimestamp != "" {
		return Decision{}, nil // never stand in the way of a deletion
	}
	var res resource
	if len(resourceDef) > 0 {
		if err := json.Unmarshal(resourceDef, &res); err != nil {
			return Decision{}, &input.Error{Field: "resource_definition", Reason: "is not a Kubernetes object in JSON"}
		}
	}
	t, err := c.ArchiveTarget(g.plugin)
	switch {
	case res.Kind == "Backup":
		pc := res.Spec.PluginConfiguration
		if res.Spec.Method != "plugin" || pc == nil || pc.Name != g.plugin {
			return Decision{}, nil
		}
		if err != nil && !errors.Is(err, cluster.ErrPluginNotUsed) {
			return Decision{}, err
		}
		// The Backup's own parameters may pick another store (the backup's, not the archive's).
		if s := pc.Parameters[cluster.ParamObjectStore]; s != "" {
			t.ObjectStore = s
		}
		if t.ServerName == "" {
			t.ServerName = c.Metadata.Name
		}
	case errors.Is(err, cluster.ErrPluginNotUsed):
		return Decision{}, nil
	case err != nil:
		return Decision{}, err
	}
	return g.probe(ctx, t), nil
}

// Prepare is Check before CloudNativePG reconciles: for a Cluster whose instances read
// ObjectStore resources (barmanObjectName), their Role and RoleBinding are made or brought up
// to date first, so the sidecars CloudNativePG is about to start can read them. When that
// fails the reconciliation waits (the sidecars would fail too).
func (g *Gate) Prepare(ctx context.Context, clusterDef, resourceDef []byte) (Decision, error) {
	if g.opts.Access != nil && !isBackup(resourceDef) {
		c, err := cluster.Parse(clusterDef)
		if err != nil {
			return Decision{}, err
		}
		if names := c.ObjectStores(g.plugin); len(names) > 0 && c.Metadata.DeletionTimestamp == "" {
			if err := g.opts.Access.GrantInstances(ctx, c.Metadata.Namespace, c.Metadata.Name, c.Metadata.UID, names); err != nil {
				reason := fmt.Sprintf("the instances of cluster %s cannot be given access to ObjectStore(s) %s",
					input.Quote(c.Metadata.Name), strings.Join(names, ", "))
				g.opts.Logger.WarnContext(ctx, "holding back the reconciliation", "reason", reason, "error", err,
					"retry_in", g.opts.RequeueAfter)
				return Decision{Requeue: true, RequeueAfter: g.opts.RequeueAfter, Reason: reason}, nil
			}
		}
	}
	return g.Check(ctx, clusterDef, resourceDef)
}

// isBackup reports whether resourceDef is a Backup (else the Cluster itself is reconciled).
func isBackup(resourceDef []byte) bool {
	var res resource
	return len(resourceDef) > 0 && json.Unmarshal(resourceDef, &res) == nil && res.Kind == "Backup"
}

// probe lists a key prefix that holds nothing: one cheap request that fails when the bucket
// or directory is gone, the credentials are refused or the store cannot be reached.
func (g *Gate) probe(ctx context.Context, t cluster.Target) Decision {
	st, err := g.stores.Lookup(ctx, t.Namespace, t.BarmanObject, t.ObjectStore)
	if err != nil {
		return g.requeue(ctx, t, err)
	}
	t.ObjectStore = st.Name
	ctx, cancel := context.WithTimeout(ctx, g.opts.ProbeTimeout)
	defer cancel()
	if r, ok := st.Store.(interface{ Root() string }); ok { // POSIX: an unmounted NFS share is "missing"
		if fi, err := os.Stat(r.Root()); err != nil {
			return g.requeue(ctx, t, err)
		} else if !fi.IsDir() {
			return g.requeue(ctx, t, errors.New("the store's path is not a directory"))
		}
	}
	for _, err := range st.Store.List(ctx, t.ServerName+"/.plinth-probe") {
		if err != nil {
			return g.requeue(ctx, t, err)
		}
		break
	}
	return Decision{}
}

func (g *Gate) requeue(ctx context.Context, t cluster.Target, cause error) Decision {
	reason := fmt.Sprintf("object store %s of server %s is not usable", input.Quote(t.ObjectStore), input.Quote(t.ServerName))
	g.opts.Logger.WarnContext(ctx, "holding back the reconciliation", "reason", reason, "error", cause,
		"retry_in", g.opts.RequeueAfter)
	return Decision{Requeue: true, RequeueAfter: g.opts.RequeueAfter, Reason: reason}
}
