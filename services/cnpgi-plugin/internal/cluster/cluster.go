// Package cluster reads what the plugin needs from a CloudNativePG Cluster, as the operator
// and instance manager send it (the Cluster object serialised with encoding/json): which
// object store and server name the plugin's parameters choose.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// The plugin parameters a Cluster sets in spec.plugins[].parameters (or an external
// cluster's plugin.parameters).
const (
	// ParamObjectStore names the store in the plugin's configuration; default: its
	// defaultStore.
	ParamObjectStore = "objectStore"
	// ParamServerName is the directory of this cluster's data in the store; default: the
	// Cluster's (or external cluster's) name.
	ParamServerName = "serverName"
	// ParamRetentionPolicy is applied after every successful base backup of the cluster, to
	// the store that backup went to: "7d", "keep:5" or "7d,keep:5" (backup.ParsePolicySpec).
	// Default: none, nothing is deleted.
	ParamRetentionPolicy = "retentionPolicy"
	// ParamTablespaceMap relocates tablespaces when a cluster recovers from an external
	// cluster's backup (barman's --tablespace NAME:LOCATION): "name:/new/path,other:/path".
	// Only on external clusters. Default: a tablespace the new cluster declares in
	// spec.tablespaces goes to CloudNativePG's volume for it, any other to its original place.
	ParamTablespaceMap = "tablespaceMap"
	// ParamBarmanObjectName names an ObjectStore resource (barmancloud.cnpg.io/v1) in the
	// Cluster's namespace, exactly as plugin-barman-cloud reads it: its users switch by
	// changing the plugin name only. Not with objectStore.
	ParamBarmanObjectName = "barmanObjectName"
)

// knownParams are the parameters this plugin understands; others are refused, so that a
// typo does not silently archive somewhere else.
var knownParams = []string{ParamObjectStore, ParamServerName, ParamRetentionPolicy, ParamTablespaceMap, ParamBarmanObjectName}

// SkipEmptyCheckAnnotation disables check_empty_wal_archive for operators that left the
// check to the plugin (value "enabled").
const SkipEmptyCheckAnnotation = "cnpg.io/skipEmptyWalArchiveCheck"

// ErrPluginNotUsed: the Cluster does not enable this plugin.
var ErrPluginNotUsed = errors.New("the cluster does not use this plugin")

// Target names where a cluster's WAL goes: a store name ("" for the default) and a server.
type Target struct {
	ObjectStore, ServerName string
	// BarmanObject is the barmanObjectName parameter: an ObjectStore resource in Namespace
	// (the Cluster's), instead of a store of the plugin's configuration.
	BarmanObject, Namespace string
	// RetentionPolicy is the retentionPolicy parameter, unparsed ("" for none).
	RetentionPolicy string
	// TablespaceMap is the tablespaceMap parameter, unparsed ("" for none).
	TablespaceMap string
}

// Cluster is the part of a CloudNativePG Cluster the plugin reads.
type Cluster struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		UID         string            `json:"uid"`
		Annotations map[string]string `json:"annotations"`
		// DeletionTimestamp is set once the Cluster is being deleted.
		DeletionTimestamp string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		// ImagePullPolicy applies to the cluster's containers, the plugin's sidecar included.
		ImagePullPolicy string   `json:"imagePullPolicy"`
		Plugins         []Plugin `json:"plugins"`
		Bootstrap       *struct {
			Recovery *struct {
				Source string `json:"source"`
			} `json:"recovery"`
		} `json:"bootstrap"`
		ExternalClusters []struct {
			Name   string  `json:"name"`
			Plugin *Plugin `json:"plugin"`
			// ConnectionParameters, when set, let a replica cluster stream from it.
			ConnectionParameters map[string]string `json:"connectionParameters"`
		} `json:"externalClusters"`
		// Replica makes the cluster a replica cluster of an external cluster.
		Replica *struct {
			Enabled *bool  `json:"enabled"`
			Source  string `json:"source"`
		} `json:"replica"`
		// Tablespaces are the cluster's declarative tablespaces, each on its own volume at
		// TablespaceLocation(name).
		Tablespaces []struct {
			Name string `json:"name"`
		} `json:"tablespaces"`
		// Backup.BarmanObjectStore is CloudNativePG's in-tree archiver (barman-cloud in the
		// PostgreSQL container); only its presence is read.
		Backup *struct {
			BarmanObjectStore json.RawMessage `json:"barmanObjectStore"`
		} `json:"backup"`
	} `json:"spec"`
	Status struct {
		CurrentPrimary string `json:"currentPrimary"`
		// PluginStatus holds what each plugin reported (SetStatusInCluster) as a string.
		PluginStatus []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"pluginStatus"`
	} `json:"status"`
}

// Plugin is one spec.plugins[] entry (or an external cluster's plugin).
type Plugin struct {
	Name          string            `json:"name"`
	Enabled       *bool             `json:"enabled"`
	IsWALArchiver *bool             `json:"isWALArchiver"`
	Parameters    map[string]string `json:"parameters"`
}

// Limits of the cluster definition, checked before it is decoded or used.
const (
	// MaxDefinition bounds a Cluster (or Backup) definition: Kubernetes objects are at most
	// 1.5 MiB in etcd; a Cluster's status can be large, so twice as much is allowed.
	MaxDefinition = 3 << 20
	// MaxParameter bounds a plugin parameter's value.
	MaxParameter = 1024
)

// paramNameRE is how a parameter name is shown as is in a field path.
var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParamName renders a client-chosen parameter name inside a field path: as is when it is a
// short plain name, else quoted and cut.
func ParamName(k string) string {
	if paramNameRE.MatchString(k) {
		return k
	}
	return input.Quote(k)
}

// Parse decodes a cluster definition, after bounding its size (MaxDefinition); the
// names it yields (cluster, parameters) are bounded and checked where they are used.
func Parse(definition []byte) (*Cluster, error) {
	if len(definition) == 0 {
		return nil, &input.Error{Field: "cluster_definition", Reason: "is empty: the Cluster object (JSON) is required"}
	}
	if len(definition) > MaxDefinition {
		return nil, input.Invalid("cluster_definition", "is %d bytes; at most %d are allowed", len(definition), MaxDefinition)
	}
	var c Cluster
	if err := json.Unmarshal(definition, &c); err != nil {
		// The decoder's message may repeat part of the input (a number literal): cut it.
		return nil, &input.Error{Field: "cluster_definition", Reason: "is not a Cluster in JSON: " + input.Truncate(err.Error(), 256)}
	}
	if c.Metadata.Name == "" {
		return nil, &input.Error{Field: "metadata.name", Reason: "is required"}
	}
	if err := input.String("metadata.name", c.Metadata.Name, 253); err != nil {
		return nil, err
	}
	return &c, nil
}

// StreamingAvailable says whether the instance pod (an instance's pod name) can stream WAL
// from a primary when the archive runs out, as CloudNativePG decides it: a replica of a
// cluster with a primary, or the designated primary of a replica cluster whose source has
// connection parameters; never while the cluster has no primary yet.
func (c *Cluster) StreamingAvailable(pod string) bool {
	switch primary := c.Status.CurrentPrimary; {
	case primary == "":
		return false
	case primary != pod:
		return true
	}
	r := c.Spec.Replica
	if r == nil || (r.Enabled != nil && !*r.Enabled) || r.Source == "" {
		return false
	}
	for _, ec := range c.Spec.ExternalClusters {
		if ec.Name == r.Source {
			return ec.ConnectionParameters != nil
		}
	}
	return false
}

// ParseTablespaceMap reads a tablespaceMap parameter: comma-separated NAME:LOCATION pairs,
// each location absolute, each name once.
func ParseTablespaceMap(v string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		name, loc, ok := strings.Cut(strings.TrimSpace(part), ":")
		switch {
		case !ok || name == "" || loc == "":
			return nil, fmt.Errorf("%s is not NAME:LOCATION", input.Quote(part))
		case !strings.HasPrefix(loc, "/") || strings.Contains(loc, "/../") || strings.HasSuffix(loc, "/.."):
			return nil, fmt.Errorf("the location of tablespace %s must be an absolute path", input.Quote(name))
		case out[name] != "":
			return nil, fmt.Errorf("tablespace %s is relocated twice", input.Quote(name))
		}
		out[name] = loc
	}
	return out, nil
}

// Relocations are where a recovery puts the backup's tablespaces, by name: every
// tablespace the Cluster declares goes to CloudNativePG's volume for it (so a backup of
// another cluster, or of a non-Kubernetes server, lands where the new pods mount it), and
// the external cluster's tablespaceMap overrides.
func (c *Cluster) Relocations(t Target) (map[string]string, error) {
	out := map[string]string{}
	for _, ts := range c.Spec.Tablespaces {
		if ts.Name != "" {
			out[ts.Name] = TablespaceLocation(ts.Name)
		}
	}
	explicit, err := ParseTablespaceMap(t.TablespaceMap)
	if err != nil {
		return nil, err
	}
	for name, loc := range explicit {
		out[name] = loc
	}
	return out, nil
}

// TablespaceRoot is where CloudNativePG mounts declarative tablespaces.
const TablespaceRoot = "/var/lib/postgresql/tablespaces"

// TablespaceLocation is the data directory of a declarative tablespace in a CloudNativePG
// pod (specs.LocationForTablespace).
func TablespaceLocation(name string) string { return TablespaceRoot + "/" + name + "/data" }

// ArchiveTarget is where the cluster archives: its spec.plugins entry for plugin.
func (c *Cluster) ArchiveTarget(plugin string) (Target, error) {
	i, err := c.entry(plugin)
	if err != nil {
		return Target{}, err
	}
	return targetOf(c.Spec.Plugins[i], fmt.Sprintf("spec.plugins[%d].parameters", i), c.Metadata.Name, c.Metadata.Namespace)
}

// entry is the index of plugin's spec.plugins entry: ErrPluginNotUsed when the cluster does
// not list it or disables it.
func (c *Cluster) entry(plugin string) (int, error) {
	for i, p := range c.Spec.Plugins {
		if p.Name != plugin {
			continue
		}
		if !p.enabled() {
			return -1, fmt.Errorf("%w: spec.plugins[%d] (%s) is disabled", ErrPluginNotUsed, i, plugin)
		}
		return i, nil
	}
	return -1, fmt.Errorf("%w: cluster %s lists no %s in spec.plugins", ErrPluginNotUsed, input.Quote(c.Metadata.Name), plugin)
}

// enabled: a plugin entry is enabled unless it says otherwise.
func (p Plugin) enabled() bool { return p.Enabled == nil || *p.Enabled }

// ArchivesWAL reports whether the cluster has plugin archive its WAL, and when not, why.
// CloudNativePG's instance manager asks every enabled plugin that can archive to archive
// each segment, whatever its isWALArchiver says (plugin-barman-cloud #606, #797), so the
// plugin honours the field itself: true archives; false does not; unset archives unless the
// cluster names another archiver (a plugin entry with isWALArchiver true, or the in-tree
// barmanObjectStore) — the API before isWALArchiver, which CloudNativePG still serves.
// A plugin the cluster does not enable is ErrPluginNotUsed, as for ArchiveTarget.
func (c *Cluster) ArchivesWAL(plugin string) (bool, string, error) {
	own, err := c.entry(plugin)
	if err != nil {
		return false, "", err
	}
	if w := c.Spec.Plugins[own].IsWALArchiver; w != nil {
		if *w {
			return true, "", nil
		}
		return false, fmt.Sprintf("spec.plugins[%d].isWALArchiver is false", own), nil
	}
	for i, p := range c.Spec.Plugins {
		if i != own && p.IsWALArchiver != nil && *p.IsWALArchiver && p.enabled() {
			return false, fmt.Sprintf("spec.plugins[%d] (%s) is the WAL archiver", i, input.Quote(p.Name)), nil
		}
	}
	if b := c.Spec.Backup; b != nil && len(b.BarmanObjectStore) > 0 && string(b.BarmanObjectStore) != "null" {
		return false, "spec.backup.barmanObjectStore archives the WAL", nil
	}
	return true, "", nil
}

// RestoreTarget is where the cluster restores WAL from: while it bootstraps by recovery
// from an external cluster served by plugin (no primary yet), that cluster's archive;
// otherwise its own.
func (c *Cluster) RestoreTarget(plugin string) (Target, error) {
	if b := c.Spec.Bootstrap; b != nil && b.Recovery != nil && b.Recovery.Source != "" && c.Status.CurrentPrimary == "" {
		for i, ec := range c.Spec.ExternalClusters {
			if ec.Name == b.Recovery.Source && ec.Plugin != nil && ec.Plugin.Name == plugin {
				return targetOf(*ec.Plugin, fmt.Sprintf("spec.externalClusters[%d].plugin.parameters", i), ec.Name, c.Metadata.Namespace)
			}
		}
	}
	return c.ArchiveTarget(plugin)
}

// ObjectStores are the ObjectStore resources (barmanObjectName) in the Cluster's namespace
// that its instances use through plugin: its own archive's and those of its external
// clusters served by plugin (a recovery or replica source), sorted, each once. Entries whose
// parameters are invalid are left out: validation refuses them.
func (c *Cluster) ObjectStores(plugin string) []string {
	var names []string
	if t, err := c.ArchiveTarget(plugin); err == nil && t.BarmanObject != "" {
		names = append(names, t.BarmanObject)
	}
	for i, ec := range c.Spec.ExternalClusters {
		if ec.Plugin == nil || ec.Plugin.Name != plugin {
			continue
		}
		t, err := targetOf(*ec.Plugin, fmt.Sprintf("spec.externalClusters[%d].plugin.parameters", i), ec.Name, c.Metadata.Namespace)
		if err == nil && t.BarmanObject != "" {
			names = append(names, t.BarmanObject)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// SkipEmptyWALArchiveCheck reports the cnpg.io/skipEmptyWalArchiveCheck annotation.
func (c *Cluster) SkipEmptyWALArchiveCheck() bool {
	return c.Metadata.Annotations[SkipEmptyCheckAnnotation] == "enabled"
}

// serverNameRE keeps a server name one safe object-key segment.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$`)

// objectNameRE is a Kubernetes object name (a DNS subdomain, RFC 1123).
var objectNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// objectNameProblem says why name cannot name an ObjectStore, or "".
func objectNameProblem(name string) string {
	if len(name) > 253 || !objectNameRE.MatchString(name) {
		return "must be the name of an ObjectStore in the Cluster's namespace (lower-case letters, digits, '-' and '.', at most 253 characters)"
	}
	return ""
}

// KnownParameters lists the plugin parameters this plugin understands.
func KnownParameters() []string { return slices.Clone(knownParams) }

// ServerNameProblem says what is wrong with a server name, or "" when it is valid.
func ServerNameProblem(name string) string {
	if serverNameRE.MatchString(name) {
		return ""
	}
	return input.Quote(name) + " must be 1-128 characters of letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
}

func targetOf(p Plugin, path, defaultServer, namespace string) (Target, error) {
	for _, k := range slices.Sorted(maps.Keys(p.Parameters)) {
		if !slices.Contains(knownParams, k) {
			return Target{}, &input.Error{Field: path + "." + ParamName(k), Reason: "unknown parameter; known: " + strings.Join(knownParams, ", ")}
		}
		if err := input.String(path+"."+k, p.Parameters[k], MaxParameter); err != nil {
			return Target{}, err
		}
	}
	t := Target{ObjectStore: p.Parameters[ParamObjectStore], ServerName: p.Parameters[ParamServerName],
		RetentionPolicy: p.Parameters[ParamRetentionPolicy], TablespaceMap: p.Parameters[ParamTablespaceMap],
		BarmanObject: p.Parameters[ParamBarmanObjectName], Namespace: namespace}
	if t.BarmanObject != "" && t.ObjectStore != "" {
		return Target{}, &input.Error{Field: path + "." + ParamBarmanObjectName,
			Reason: "set either barmanObjectName (an ObjectStore resource) or objectStore (a store of the plugin's configuration), not both"}
	}
	if t.BarmanObject != "" {
		if problem := objectNameProblem(t.BarmanObject); problem != "" {
			return Target{}, &input.Error{Field: path + "." + ParamBarmanObjectName, Reason: problem}
		}
	}
	if t.ServerName == "" {
		t.ServerName = defaultServer
	}
	if problem := ServerNameProblem(t.ServerName); problem != "" {
		return Target{}, &input.Error{Field: path + "." + ParamServerName, Reason: problem}
	}
	return t, nil
}
