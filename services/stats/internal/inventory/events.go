package inventory

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/input"
)

// The streams and subjects consumed, as the publishers declare them in proto/plinth/events/v1.
var (
	LVMDStream       = events.StreamOf(&eventsv1.NodeHeartbeat{})
	KaasStream       = events.StreamOf(&eventsv1.MachineStateChanged{})
	heartbeatSubject = events.SubjectOf(&eventsv1.NodeHeartbeat{})
	capacitySubject  = events.SubjectOf(&eventsv1.CapacityChanged{})
	machineSubject   = events.SubjectOf(&eventsv1.MachineStateChanged{})
	clusterSubject   = events.SubjectOf(&eventsv1.ClusterStatusChanged{})
	// LVMDSubjects and KaasSubjects are the consumers' filters: the inventory's events and the
	// volume changes of the activity.
	LVMDSubjects = []string{heartbeatSubject, capacitySubject, volumeCreatedSubject, volumeRemovedSubject, volumeResizedSubject}
	KaasSubjects = []string{machineSubject, clusterSubject}
)

// Bounds on what an event may carry into the inventory.
const (
	maxAddresses = 32
	maxAddress   = 64 // an IPv6 address with a zone fits
	maxClasses   = 64
	maxMessage   = 1 << 10
)

// Handler applies the inventory's events; it is an events.Handler for both consumers.
type Handler struct {
	Store Store
	// Now is the clock (for events without a time); default time.Now.
	Now func() time.Time
}

// Handle applies one event in tx. A payload that does not decode, or carries fields beyond
// the inventory's bounds, is a permanent error: retrying cannot fix it.
func (h Handler) Handle(ctx context.Context, tx pgx.Tx, d events.Delivery) error {
	apply, err := h.parse(d.Subject, d.Data, h.eventTime(d.Time))
	if err != nil {
		return events.Permanent(fmt.Errorf("%s event %s: %w", d.Subject, input.Quote(d.ID), err))
	}
	if apply == nil {
		return nil // a subject or change the inventory does not track
	}
	return apply(ctx, tx)
}

// change is an event's effect on the store.
type change func(ctx context.Context, tx pgx.Tx) error

// parse decodes and checks an event's payload and returns its change.
func (h Handler) parse(subject string, data []byte, at time.Time) (change, error) {
	switch subject {
	case heartbeatSubject:
		var m eventsv1.NodeHeartbeat
		if err := decode(data, &m); err != nil {
			return nil, err
		}
		hb, err := heartbeat(&m, at)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx pgx.Tx) error { return RecordHeartbeat(ctx, h.Store, tx, hb) }, nil
	case capacitySubject:
		var m eventsv1.CapacityChanged
		if err := decode(data, &m); err != nil {
			return nil, err
		}
		if err := input.Required("node", m.GetNode(), input.MaxName); err != nil {
			return nil, err
		}
		dc, err := deviceClass(m.GetDeviceClass(), "device_class")
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx pgx.Tx) error {
			return RecordCapacity(ctx, h.Store, tx, m.GetNode(), dc, at)
		}, nil
	case machineSubject:
		var m eventsv1.MachineStateChanged
		if err := decode(data, &m); err != nil {
			return nil, err
		}
		mc, err := machine(&m, at)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx pgx.Tx) error { return RecordMachine(ctx, h.Store, tx, mc) }, nil
	case clusterSubject:
		var m eventsv1.ClusterStatusChanged
		if err := decode(data, &m); err != nil {
			return nil, err
		}
		if err := input.Required("cluster", m.GetCluster(), input.MaxName); err != nil {
			return nil, err
		}
		act, err := activityOf(subject, &m, clusterSummary(&m), at)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx pgx.Tx) error {
			if err := h.Store.RecordActivity(ctx, tx, act, MaxActivity); err != nil || !m.GetDeleted() {
				return err
			}
			return ReleaseMachines(ctx, h.Store, tx, m.GetCluster(), at)
		}, nil
	}
	if act, ok, err := volumeActivity(subject, data, at); ok {
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx pgx.Tx) error { return h.Store.RecordActivity(ctx, tx, act, MaxActivity) }, nil
	}
	return nil, nil
}

// eventTime is the event's ce-time, or now when it has none; never in the future (a clock
// ahead would keep a dead node ready).
func (h Handler) eventTime(t time.Time) time.Time {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	if t.IsZero() || t.After(now) {
		return now
	}
	return t
}

func decode(data []byte, m proto.Message) error {
	if err := proto.Unmarshal(data, m); err != nil {
		return fmt.Errorf("undecodable payload: %w", err)
	}
	return nil
}

// heartbeat checks a NodeHeartbeat's fields.
func heartbeat(m *eventsv1.NodeHeartbeat, at time.Time) (Heartbeat, error) {
	hb := Heartbeat{Node: m.GetNode(), At: at, IntervalSeconds: int(min(m.GetIntervalSeconds(), math.MaxInt32)),
		Addresses: m.GetAddresses(), AgentVersion: m.GetAgentVersion()}
	if err := checkNode(hb.Node, hb.Addresses); err != nil {
		return Heartbeat{}, err
	}
	if err := input.String("agent_version", hb.AgentVersion, input.MaxName); err != nil {
		return Heartbeat{}, err
	}
	if len(m.GetDeviceClasses()) > maxClasses {
		return Heartbeat{}, input.Invalid("device_classes", "has %d entries; at most %d are allowed", len(m.GetDeviceClasses()), maxClasses)
	}
	for i, c := range m.GetDeviceClasses() {
		dc, err := deviceClass(c, fmt.Sprintf("device_classes[%d]", i))
		if err != nil {
			return Heartbeat{}, err
		}
		hb.Classes = append(hb.Classes, dc)
	}
	return hb, nil
}

func checkNode(name string, addresses []string) error {
	if err := input.Required("node", name, input.MaxName); err != nil {
		return err
	}
	return input.Strings("addresses", addresses, maxAddress, maxAddresses)
}

// deviceClass checks one device class; sizes beyond int64 are clamped (no disk is 8 EiB).
func deviceClass(c *eventsv1.DeviceClassCapacity, field string) (DeviceClass, error) {
	if err := input.Required(field+".name", c.GetName(), input.MaxName); err != nil {
		return DeviceClass{}, err
	}
	if err := input.String(field+".volume_group", c.GetVolumeGroup(), input.MaxName); err != nil {
		return DeviceClass{}, err
	}
	return DeviceClass{Name: c.GetName(), VolumeGroup: c.GetVolumeGroup(), Default: c.GetDefault(),
		SizeBytes: clampBytes(c.GetSizeBytes()), FreeBytes: clampBytes(c.GetFreeBytes()),
		Volumes: int(min(c.GetVolumeCount(), math.MaxInt32))}, nil
}

func clampBytes(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

// machine checks a MachineStateChanged's fields; the free-text message is cut, not refused.
func machine(m *eventsv1.MachineStateChanged, at time.Time) (Machine, error) {
	mc := Machine{Name: m.GetName(), Cluster: m.GetCluster(), Pool: m.GetPool(), Role: m.GetRole(), State: m.GetState(),
		Addresses: m.GetAddresses(), Provider: m.GetProvider(), ProviderID: m.GetProviderId(),
		ProviderStatus: m.GetProviderStatus(), FirstSeen: at, ChangedAt: at}
	if err := checkNode(mc.Name, mc.Addresses); err != nil {
		return Machine{}, err
	}
	for field, v := range map[string]string{"cluster": mc.Cluster, "pool": mc.Pool, "provider": mc.Provider,
		"provider_id": mc.ProviderID, "provider_status": mc.ProviderStatus} {
		if err := input.String(field, v, input.MaxName); err != nil {
			return Machine{}, err
		}
	}
	if err := input.String("message", m.GetMessage(), input.MaxText); err != nil {
		return Machine{}, err
	}
	mc.Message = input.Truncate(m.GetMessage(), maxMessage)
	return mc, nil
}
