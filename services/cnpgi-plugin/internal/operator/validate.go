package operator

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
)

// Stores is what the rules need to know of the configured object stores;
// *objectstore.Registry provides it.
type Stores interface {
	// Names lists the configured store names, sorted.
	Names() []string
	// Default is the store used when a cluster names none, or "".
	Default() string
}

// Rules apply to the clusters that use the plugin called Plugin.
type Rules struct {
	// Plugin is the plugin's name, as clusters list it in spec.plugins.
	Plugin string
	// Stores are the object stores the plugin is configured with.
	Stores Stores
}

// FieldError is one problem in a Cluster. Path holds the JSON field names and array indexes
// leading to the field, e.g. spec, plugins, 0, parameters, serverName: CloudNativePG turns it
// into a field path of the Cluster and needs at least one element.
type FieldError struct {
	Path    []string
	Value   string
	Message string
}

func (e FieldError) Error() string { return strings.Join(e.Path, ".") + ": " + e.Message }

// entry is one place a Cluster gives this plugin parameters.
type entry struct {
	// key identifies the entry across versions of the Cluster, so that reordering spec.plugins
	// or externalClusters does not look like a change of server name.
	key           string
	path          []string // to the parameters map
	params        map[string]string
	defaultServer string
	// external: an externalClusters entry, a source this cluster reads but does not own.
	external bool
}

// entries are the Cluster's spec.plugins entries for the plugin and the external clusters
// (recovery and replica sources) whose plugin is this one.
func (r Rules) entries(c *cluster.Cluster) []entry {
	var out []entry
	for i, p := range c.Spec.Plugins {
		if p.Name == r.Plugin {
			out = append(out, entry{key: "plugin", path: []string{"spec", "plugins", strconv.Itoa(i), "parameters"},
				params: p.Parameters, defaultServer: c.Metadata.Name})
		}
	}
	for i, ec := range c.Spec.ExternalClusters {
		if ec.Plugin != nil && ec.Plugin.Name == r.Plugin {
			out = append(out, entry{key: "externalCluster:" + ec.Name, path: []string{"spec", "externalClusters", strconv.Itoa(i), "plugin", "parameters"},
				params: ec.Plugin.Parameters, defaultServer: ec.Name, external: true})
		}
	}
	return out
}

// ValidateCreate reports every problem with the plugin's parameters in a new Cluster: unknown
// parameters (a typo would silently archive elsewhere), an objectStore the plugin is not
// configured with, and invalid server names.
func (r Rules) ValidateCreate(c *cluster.Cluster) []FieldError {
	var errs []FieldError
	for _, e := range r.entries(c) {
		errs = append(errs, r.checkEntry(e)...)
	}
	return errs
}

// ValidateChange is ValidateCreate on the new Cluster, plus: the server name, explicit or
// defaulted, cannot change while the plugin stays configured, because the archive and the
// backups of the cluster live under it and a new name would start a disconnected archive.
func (r Rules) ValidateChange(old, updated *cluster.Cluster) []FieldError {
	errs := r.ValidateCreate(updated)
	before := map[string]string{} // entry key → effective server name
	for _, e := range r.entries(old) {
		before[e.key] = serverName(e)
	}
	for _, e := range r.entries(updated) {
		was, ok := before[e.key]
		if !ok {
			continue
		}
		if now := serverName(e); now != was {
			errs = append(errs, FieldError{
				Path: pathTo(e, cluster.ParamServerName), Value: now,
				Message: fmt.Sprintf("is immutable: it was %s; the cluster's archive and backups live under that name (create a new cluster, recovering from this one, to use another)", input.Quote(was)),
			})
		}
	}
	return errs
}

func (r Rules) checkEntry(e entry) []FieldError {
	var errs []FieldError
	known := cluster.KnownParameters()
	for _, k := range slices.Sorted(maps.Keys(e.params)) {
		if !slices.Contains(known, k) {
			errs = append(errs, FieldError{Path: pathTo(e, k), Value: e.params[k],
				Message: "unknown parameter; this plugin takes: " + strings.Join(known, ", ")})
		}
	}
	store := e.params[cluster.ParamObjectStore]
	switch names := r.Stores.Names(); {
	case store != "" && !slices.Contains(names, store):
		errs = append(errs, FieldError{Path: pathTo(e, cluster.ParamObjectStore), Value: store,
			Message: "names no object store of the plugin; configured: " + strings.Join(names, ", ")})
	case store == "" && r.Stores.Default() == "":
		errs = append(errs, FieldError{Path: pathTo(e, cluster.ParamObjectStore),
			Message: "is required: the plugin has no default store; configured: " + strings.Join(names, ", ")})
	}
	if policy, ok := e.params[cluster.ParamRetentionPolicy]; ok {
		errs = append(errs, checkRetention(e, policy)...)
	}
	if m, ok := e.params[cluster.ParamTablespaceMap]; ok {
		errs = append(errs, checkTablespaceMap(e, m)...)
	}
	if name := serverName(e); cluster.ServerNameProblem(name) != "" {
		errs = append(errs, FieldError{Path: pathTo(e, cluster.ParamServerName), Value: name, Message: cluster.ServerNameProblem(name)})
	}
	return errs
}

// checkRetention refuses a retentionPolicy the plugin could not apply after a backup, and
// one on an external cluster: that archive belongs to another cluster, whose own policy
// prunes it, and silently ignoring the parameter would mislead.
func checkRetention(e entry, policy string) []FieldError {
	path := pathTo(e, cluster.ParamRetentionPolicy)
	if e.external {
		return []FieldError{{Path: path, Value: policy,
			Message: "applies only to the cluster's own archive (spec.plugins); set it on the cluster that owns this archive"}}
	}
	if _, err := backup.ParsePolicySpec(policy); err != nil {
		msg := err.Error()
		var be *backup.Error
		if errors.As(err, &be) {
			msg = be.Msg
		}
		return []FieldError{{Path: path, Value: policy, Message: msg}}
	}
	return nil
}

// checkTablespaceMap refuses a tablespaceMap that does not parse, and one on the cluster's
// own entry: relocation applies when recovering from an external cluster's backups.
func checkTablespaceMap(e entry, m string) []FieldError {
	path := pathTo(e, cluster.ParamTablespaceMap)
	if !e.external {
		return []FieldError{{Path: path, Value: m,
			Message: "applies only when recovering from an external cluster (spec.externalClusters[].plugin.parameters)"}}
	}
	if _, err := cluster.ParseTablespaceMap(m); err != nil {
		return []FieldError{{Path: path, Value: m, Message: err.Error()}}
	}
	return nil
}

// serverName is the entry's server name: the parameter, or the (external) cluster's name.
func serverName(e entry) string {
	if s := e.params[cluster.ParamServerName]; s != "" {
		return s
	}
	return e.defaultServer
}

func pathTo(e entry, key string) []string { return append(slices.Clone(e.path), key) }
