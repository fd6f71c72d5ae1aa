// Package events builds the messages lvmd-agent publishes (proto/plinth/events/v1/lvmd.proto,
// stream PLINTH_LVMD): node heartbeats, capacity changes, volume changes and backup job
// states. The store writes them to the outbox in the transaction of the change they report;
// what changed, and so which events a volume record raises, volume.Sync decides.
package events

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// MaxMessage bounds a job's message in an event: one oversized event must never block the
// stream (NATS refuses payloads over its limit).
const MaxMessage = 2 << 10

// Capacity is a device class's space as events carry it.
func Capacity(c volume.Capacity) *eventsv1.DeviceClassCapacity {
	return &eventsv1.DeviceClassCapacity{
		Name: c.DeviceClass, VolumeGroup: c.VolumeGroup, Default: c.Default,
		SizeBytes: c.Size, FreeBytes: c.Free, VolumeCount: uint32(c.Volumes),
	}
}

// Heartbeat is the node's periodic inventory.
func Heartbeat(node string, addresses []string, caps []volume.Capacity, intervalSeconds uint32, version string) *eventsv1.NodeHeartbeat {
	hb := &eventsv1.NodeHeartbeat{Node: node, Addresses: addresses, IntervalSeconds: intervalSeconds, AgentVersion: version}
	// The totals count each volume group once: a thin class's pool is part of its group, which
	// may also hold a thick class (its size and free space less its spare) or only thin ones
	// (the group's own).
	thick := map[string]bool{}
	for _, c := range caps {
		hb.DeviceClasses = append(hb.DeviceClasses, Capacity(c))
		if c.Pool == nil {
			thick[c.VolumeGroup] = true
			hb.TotalSizeBytes += c.Size
			hb.TotalFreeBytes += c.Free
		}
	}
	for _, c := range caps {
		if !thick[c.VolumeGroup] {
			thick[c.VolumeGroup] = true
			hb.TotalSizeBytes += c.GroupSize
			hb.TotalFreeBytes += c.GroupFree
		}
	}
	return hb
}

// JobState is a job's state change.
func JobState(j backup.Job) *eventsv1.BackupStateChanged {
	e := &eventsv1.BackupStateChanged{
		Node: j.Node, Name: j.Name, VolumeHandle: j.VolumeHandle,
		Message:  input.Truncate(j.Message, MaxMessage),
		Location: j.Location, BytesDone: j.BytesDone, SizeBytes: j.SizeBytes, Encrypted: j.Encrypted,
		Kind: eventsv1.VolumeJobKind_VOLUME_JOB_KIND_BACKUP,
	}
	if j.Kind == backup.KindRestore {
		e.Kind = eventsv1.VolumeJobKind_VOLUME_JOB_KIND_RESTORE
	}
	switch j.State {
	case backup.InProgress:
		e.State = eventsv1.VolumeJobState_VOLUME_JOB_STATE_IN_PROGRESS
	case backup.Complete:
		e.State = eventsv1.VolumeJobState_VOLUME_JOB_STATE_COMPLETE
	case backup.Failed:
		e.State = eventsv1.VolumeJobState_VOLUME_JOB_STATE_ERROR
	}
	return e
}

// Payload is the event e of a volume record change (see volume.RecordChange) as the agent
// publishes it. A volume's creation, resize or removal names the user whose request ctx
// carries (the gateway's verified caller); the poll's ctx names nobody.
func Payload(ctx context.Context, e volume.Event) (proto.Message, error) {
	switch e := e.(type) {
	case volume.VolumeCreated:
		v := e.Volume
		return &eventsv1.VolumeCreated{Node: e.Node, DeviceClass: v.DeviceClass, Name: v.Name,
			SizeBytes: v.Size, Tags: v.Tags, RestoredFrom: e.RestoredFrom, Actor: authn.Actor(ctx)}, nil
	case volume.VolumeResized:
		v := e.Volume
		return &eventsv1.VolumeResized{Node: e.Node, DeviceClass: v.DeviceClass, Name: v.Name,
			SizeBytes: v.Size, PreviousSizeBytes: e.Previous, Actor: authn.Actor(ctx)}, nil
	case volume.VolumeRemoved:
		return &eventsv1.VolumeRemoved{Node: e.Node, DeviceClass: e.DeviceClass, Name: e.Name, Actor: authn.Actor(ctx)}, nil
	case volume.CapacityChanged:
		return &eventsv1.CapacityChanged{Node: e.Node, DeviceClass: Capacity(e.Capacity)}, nil
	}
	return nil, fmt.Errorf("events: %T has no payload", e)
}
