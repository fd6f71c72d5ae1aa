package wal

import (
	"context"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// Resolve is the Target a cluster's plugin parameters choose: the ObjectStore resource ct
// names (barmanObjectName, in the Cluster's namespace) or the configured store ("" for the
// default), and ct's server name. Every role resolves a cluster.Target here, so an unknown
// store is refused the same way (stores.ErrUnknownStore) whoever asks.
func Resolve(ctx context.Context, r *stores.Registry, ct cluster.Target) (Target, error) {
	st, err := r.Lookup(ctx, ct.Namespace, ct.BarmanObject, ct.ObjectStore)
	if err != nil {
		return Target{}, err
	}
	return Target{Store: st, Server: ct.ServerName}, nil
}
