// Package inventory keeps what Postgres (and through its outbox, NATS) knows of the node's
// device classes in step with lvm: the volume service records every change the agent makes
// as it makes it, and the poll here catches changes made by hand (each class's volumes and
// capacity are compared with the last record; every difference becomes an event). It also
// sends the node's heartbeat.
package inventory

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	lvmdevents "github.com/plinth-dev/plinth/services/lvmd-agent/internal/events"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// Publisher writes an event (store.Store).
type Publisher interface {
	Publish(ctx context.Context, payload proto.Message) error
}

// Options configure a Reporter.
type Options struct {
	Volumes   *volume.Service
	Publisher Publisher
	Node      string
	// Addresses are the node's addresses in heartbeats; nil means discover them.
	Addresses []string
	// Poll is how often lvm is compared with the record even without a change by the agent.
	Poll time.Duration
	// HeartbeatInterval is announced in heartbeats.
	HeartbeatInterval time.Duration
	Version           string
	Logger            *slog.Logger
}

// Reporter runs the comparison loop and sends heartbeats.
type Reporter struct {
	o Options
}

// New returns a Reporter.
func New(o Options) *Reporter {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reporter{o: o}
}

// Run compares at once, then every Poll, until ctx ends. Failures (the database away) are
// logged and retried at the next turn: nothing is lost, since the record only moves forward
// when its events are written with it.
func (r *Reporter) Run(ctx context.Context) error {
	t := time.NewTicker(r.o.Poll)
	defer t.Stop()
	for {
		if err := r.Reconcile(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.WarnContext(ctx, "could not record the device classes; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Reconcile compares every class once.
func (r *Reporter) Reconcile(ctx context.Context) error {
	var errs []error
	for _, dc := range r.o.Volumes.Classes().All() {
		if _, err := r.o.Volumes.Reconcile(ctx, dc.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Heartbeat sends the node's inventory: its addresses and every class with its space.
func (r *Reporter) Heartbeat(ctx context.Context) error {
	var caps []volume.Capacity
	for _, dc := range r.o.Volumes.Classes().All() {
		c, _, err := r.o.Volumes.State(ctx, dc.Name)
		if err != nil {
			return err
		}
		caps = append(caps, c)
	}
	addrs := r.o.Addresses
	if addrs == nil {
		addrs = Addresses()
	}
	hb := lvmdevents.Heartbeat(r.o.Node, addrs, caps, uint32(r.o.HeartbeatInterval/time.Second), r.o.Version)
	return r.o.Publisher.Publish(ctx, hb)
}

// Addresses are the host's global unicast IP addresses.
func Addresses() []string {
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := []string{}
	for _, a := range ifaces {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}
