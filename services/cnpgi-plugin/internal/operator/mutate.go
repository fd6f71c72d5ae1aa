package operator

import (
	"strconv"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/operator/jsonpatch"
)

// Mutate returns the defaults the plugin writes into a Cluster's spec.plugins entries, as a
// JSON patch: serverName (the cluster's name) and objectStore (the plugin's default store).
// Written down, they no longer depend on the plugin's configuration, so a later change of the
// default store cannot move an existing cluster's archive. The patch is empty when nothing is
// missing.
func (r Rules) Mutate(c *cluster.Cluster) jsonpatch.Patch {
	var p jsonpatch.Patch
	for i, pl := range c.Spec.Plugins {
		if pl.Name != r.Plugin {
			continue
		}
		defaults := map[string]string{}
		if _, ok := pl.Parameters[cluster.ParamServerName]; !ok {
			defaults[cluster.ParamServerName] = c.Metadata.Name
		}
		if _, ok := pl.Parameters[cluster.ParamObjectStore]; !ok && r.Stores.Default() != "" {
			defaults[cluster.ParamObjectStore] = r.Stores.Default()
		}
		base := []string{"spec", "plugins", strconv.Itoa(i), "parameters"}
		switch {
		case len(defaults) == 0:
		case pl.Parameters == nil: // absent (or null): add the whole map
			p.Add(jsonpatch.Pointer(base...), defaults)
		default:
			for _, k := range []string{cluster.ParamObjectStore, cluster.ParamServerName} {
				if v, ok := defaults[k]; ok {
					p.Add(jsonpatch.Pointer(append(base, k)...), v)
				}
			}
		}
	}
	return p
}
