package cluster

import "errors"

// Claim is a reconciler's lease on one cluster: whoever holds it is the only one acting on
// the cluster until it lapses.
type Claim struct {
	ID   int64
	Name string
	// Generation is the cluster's API generation when it was claimed; an API change during
	// the pass moves it, so the pass runs again at once.
	Generation int64
}

// ErrLeaseLost: the reconciler's lease on the cluster expired and another may hold it; the
// change was not saved.
var ErrLeaseLost = errors.New("the reconciler's lease on the cluster was lost")
