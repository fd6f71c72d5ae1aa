// Package pgconfig fills in the PostgreSQL settings WAL archiving through the plugin relies on
// (CNPG-I Postgres.EnrichConfiguration), without overriding anything the cluster already sets.
package pgconfig

import (
	"errors"
	"maps"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
)

// Operation is why the instance manager is writing postgresql.conf.
type Operation int

const (
	// OperationUnspecified comes from operators older than cnpg-i v0.3.0, which always meant
	// the running instance: treated like OperationReconcile.
	OperationUnspecified Operation = iota
	// OperationInit: the first configuration of a new instance (initdb or join).
	OperationInit
	// OperationRestore: the configuration of a recovery (the restore job).
	OperationRestore
	// OperationReconcile: the configuration of a running instance.
	OperationReconcile
	// OperationUpgrade: the configuration for a major-version upgrade (pg_upgrade).
	OperationUpgrade
)

// Defaults are the settings added when absent. archive_mode and wal_level make archiving
// possible at all; archive_timeout bounds how much committed work sits in a partly filled
// segment that is not archived yet, the data a restore from the archive alone would lose
// (5 minutes is CloudNativePG's own default).
func Defaults() map[string]string {
	return map[string]string{
		"archive_mode":    "on",
		"archive_timeout": "5min",
		"wal_level":       "replica",
	}
}

// Enrich returns the configuration with Defaults added where configs lacks them, or nil when
// it needs nothing. A non-nil result is the WHOLE configuration: CloudNativePG replaces the
// map with it. nil keeps whatever the instance manager (or another plugin) has, so a plugin
// with nothing to add must answer nil, never a copy.
//
// Restores and major upgrades get nothing: a recovery does not archive, and a pg_upgrade run
// must not ship the new system's WAL into the old one's archive. clusterDef may be empty
// (operators before cnpg-i v0.3.0 do not send it); otherwise a Cluster that does not enable
// the plugin gets nothing either.
func Enrich(configs map[string]string, clusterDef []byte, op Operation, plugin string) (map[string]string, error) {
	switch op {
	case OperationUnspecified, OperationInit, OperationReconcile:
	default:
		return nil, nil
	}
	if len(clusterDef) > 0 {
		c, err := cluster.Parse(clusterDef)
		if err != nil {
			return nil, err
		}
		if _, err := c.ArchiveTarget(plugin); errors.Is(err, cluster.ErrPluginNotUsed) {
			return nil, nil
		}
	}
	var out map[string]string
	for k, v := range Defaults() {
		if _, set := configs[k]; set {
			continue
		}
		if out == nil {
			out = maps.Clone(configs)
			if out == nil {
				out = map[string]string{}
			}
		}
		out[k] = v
	}
	return out, nil
}
