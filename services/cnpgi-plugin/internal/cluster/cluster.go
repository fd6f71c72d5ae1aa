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
)

// knownParams are the parameters this plugin understands; others are refused, so that a
// typo does not silently archive somewhere else.
var knownParams = []string{ParamObjectStore, ParamServerName, ParamRetentionPolicy}

// SkipEmptyCheckAnnotation disables check_empty_wal_archive for operators that left the
// check to the plugin (value "enabled").
const SkipEmptyCheckAnnotation = "cnpg.io/skipEmptyWalArchiveCheck"

// Error is a problem with the Cluster definition; Field is a JSON path in it.
type Error struct {
	Field, Reason string
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

// ErrPluginNotUsed: the Cluster does not enable this plugin.
var ErrPluginNotUsed = errors.New("the cluster does not use this plugin")

// Target names where a cluster's WAL goes: a store name ("" for the default) and a server.
type Target struct {
	ObjectStore, ServerName string
	// RetentionPolicy is the retentionPolicy parameter, unparsed ("" for none).
	RetentionPolicy string
}

// Cluster is the part of a CloudNativePG Cluster the plugin reads.
type Cluster struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
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
		} `json:"externalClusters"`
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

// Parse decodes a cluster definition.
func Parse(definition []byte) (*Cluster, error) {
	if len(definition) == 0 {
		return nil, &Error{Field: "cluster_definition", Reason: "is empty: the Cluster object (JSON) is required"}
	}
	var c Cluster
	if err := json.Unmarshal(definition, &c); err != nil {
		return nil, &Error{Field: "cluster_definition", Reason: "is not a Cluster in JSON: " + err.Error()}
	}
	if c.Metadata.Name == "" {
		return nil, &Error{Field: "metadata.name", Reason: "is required"}
	}
	return &c, nil
}

// ArchiveTarget is where the cluster archives: its spec.plugins entry for plugin.
func (c *Cluster) ArchiveTarget(plugin string) (Target, error) {
	for i, p := range c.Spec.Plugins {
		if p.Name != plugin {
			continue
		}
		if p.Enabled != nil && !*p.Enabled {
			return Target{}, fmt.Errorf("%w: spec.plugins[%d] (%s) is disabled", ErrPluginNotUsed, i, plugin)
		}
		return targetOf(p, fmt.Sprintf("spec.plugins[%d].parameters", i), c.Metadata.Name)
	}
	return Target{}, fmt.Errorf("%w: cluster %q lists no %s in spec.plugins", ErrPluginNotUsed, c.Metadata.Name, plugin)
}

// RestoreTarget is where the cluster restores WAL from: while it bootstraps by recovery
// from an external cluster served by plugin (no primary yet), that cluster's archive;
// otherwise its own.
func (c *Cluster) RestoreTarget(plugin string) (Target, error) {
	if b := c.Spec.Bootstrap; b != nil && b.Recovery != nil && b.Recovery.Source != "" && c.Status.CurrentPrimary == "" {
		for i, ec := range c.Spec.ExternalClusters {
			if ec.Name == b.Recovery.Source && ec.Plugin != nil && ec.Plugin.Name == plugin {
				return targetOf(*ec.Plugin, fmt.Sprintf("spec.externalClusters[%d].plugin.parameters", i), ec.Name)
			}
		}
	}
	return c.ArchiveTarget(plugin)
}

// SkipEmptyWALArchiveCheck reports the cnpg.io/skipEmptyWalArchiveCheck annotation.
func (c *Cluster) SkipEmptyWALArchiveCheck() bool {
	return c.Metadata.Annotations[SkipEmptyCheckAnnotation] == "enabled"
}

// serverNameRE keeps a server name one safe object-key segment.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$`)

// KnownParameters lists the plugin parameters this plugin understands.
func KnownParameters() []string { return slices.Clone(knownParams) }

// ServerNameProblem says what is wrong with a server name, or "" when it is valid.
func ServerNameProblem(name string) string {
	if serverNameRE.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%q must be 1-128 characters of letters, digits, '.', '_' and '-', starting and ending with a letter or digit", name)
}

func targetOf(p Plugin, path, defaultServer string) (Target, error) {
	for _, k := range slices.Sorted(maps.Keys(p.Parameters)) {
		if !slices.Contains(knownParams, k) {
			return Target{}, &Error{Field: path + "." + k, Reason: "unknown parameter; known: " + strings.Join(knownParams, ", ")}
		}
	}
	t := Target{ObjectStore: p.Parameters[ParamObjectStore], ServerName: p.Parameters[ParamServerName],
		RetentionPolicy: p.Parameters[ParamRetentionPolicy]}
	if t.ServerName == "" {
		t.ServerName = defaultServer
	}
	if problem := ServerNameProblem(t.ServerName); problem != "" {
		return Target{}, &Error{Field: path + "." + ParamServerName, Reason: problem}
	}
	return t, nil
}
