// Package events builds what kaas publishes (plinth.events.v1 ClusterStatusChanged and
// MachineStateChanged, stream PLINTH_KAAS) from its clusters and machines. The store writes
// them (cluster.Change's events) to the outbox in the transaction of the change they describe.
package events

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// maxText bounds the free text an event carries, so an event never outgrows NATS' payload limit.
const maxText = 2048

// ClusterStatus is the event for a cluster whose status went from previous to c.Status
// (previous UNSPECIFIED for a new cluster); deleted marks the cluster's end.
func ClusterStatus(c cluster.Cluster, previous cluster.Status, deleted bool) *eventsv1.ClusterStatusChanged {
	return &eventsv1.ClusterStatusChanged{
		Cluster:        c.Name,
		Status:         eventsv1.KaasClusterStatus(c.Status),
		PreviousStatus: eventsv1.KaasClusterStatus(previous),
		StatusMessage:  input.Truncate(c.StatusMessage, maxText),
		K8SVersion:     c.Version,
		Provider:       c.Provider,
		Deleted:        deleted,
	}
}

// Payload is the event e of a change (see cluster.Change) as kaas publishes it. A status
// change names the user whose request ctx carries (a delete, scale or upgrade); the
// reconciler's ctx names nobody.
func Payload(ctx context.Context, e cluster.Event) (proto.Message, error) {
	switch e := e.(type) {
	case cluster.StatusChange:
		p := ClusterStatus(e.Cluster, e.Previous, e.Deleted)
		p.Actor = authn.Actor(ctx)
		return p, nil
	case cluster.MachineChange:
		return MachineState(e.Cluster, e.Machine, e.Previous, e.InstanceType), nil
	}
	return nil, fmt.Errorf("events: %T has no payload", e)
}

// MachineState is the event for machine m of c (in a pool of instance type instanceType)
// whose state was previous (0 for a new machine).
func MachineState(c cluster.Cluster, m cluster.Machine, previous cluster.MachineState, instanceType string) *eventsv1.MachineStateChanged {
	return &eventsv1.MachineStateChanged{
		Cluster:        c.Name,
		Pool:           m.Pool,
		Name:           m.Name,
		Addresses:      slices.Clone(m.Addresses),
		State:          eventsv1.MachineState(m.State),
		PreviousState:  eventsv1.MachineState(previous),
		Role:           eventsv1.MachineRole(m.Role),
		Provider:       c.Provider,
		ProviderId:     m.ProviderID,
		ProviderStatus: input.Truncate(m.ProviderStatus, 256),
		InstanceType:   instanceType,
		K8SVersion:     m.Version,
		Message:        input.Truncate(m.Message, maxText),
	}
}
