package volume

import (
	"errors"
	"fmt"
)

// The domain's failures; internal/grpc/errors.go maps each to its status code.
var (
	// ErrVolumeNotFound: no such volume in the class.
	ErrVolumeNotFound = errors.New("logical volume not found")
	// ErrVolumeGroupMissing: the class's volume group has disappeared from the node.
	ErrVolumeGroupMissing = errors.New("the device class's volume group is missing")
	// ErrRefused: lvm refused the class's own settings (stripe, lvcreate-options).
	ErrRefused = errors.New("lvm refused the device class's settings")
)

// ClassNotFoundError: the request names a device class the agent does not have.
type ClassNotFoundError struct{ Name string }

func (e *ClassNotFoundError) Error() string { return "device class not found: " + e.Name }

// OptionClassNotFoundError: the request names an lvcreate option class lvmd.yaml does not
// have.
type OptionClassNotFoundError struct{ Name string }

func (e *OptionClassNotFoundError) Error() string {
	return "no lvcreate option class " + e.Name + " in this node's lvmd.yaml"
}

// NoSpaceError: the class has less free space (after its spare) than the request needs.
type NoSpaceError struct {
	Free, Requested uint64
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("not enough space left on VG: free=%d, requested=%d", e.Free, e.Requested)
}

// ShrinkError: a resize asked for less than the volume has. lvm would shrink an inactive
// volume without asking and destroy the data past the new end.
type ShrinkError struct {
	Current, Requested uint64
}

func (e *ShrinkError) Error() string {
	return fmt.Sprintf("shrinking volume size is not allowed: current=%d, requested=%d", e.Current, e.Requested)
}

// ExistsError: a volume of that name exists with another size.
type ExistsError struct {
	Name          string
	Size, Request uint64
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("logical volume %s already exists with %d bytes (requested %d)", e.Name, e.Size, e.Request)
}

// BusyError: a backup or restore holds the volume.
type BusyError struct {
	Volume, By string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("logical volume %s is in use by %s; retry when it has finished", e.Volume, e.By)
}

// NameTooLongError: the name fits lvm's 127 bytes, but not with the class's volume group
// before it (lvm limits "vg/lv").
type NameTooLongError struct {
	Len, Max    int
	VolumeGroup string
}

func (e *NameTooLongError) Error() string {
	return fmt.Sprintf("is %d bytes; lvm allows at most %d in this device class (volume group %s: \"vg/name\" is at most %d bytes)",
		e.Len, e.Max, e.VolumeGroup, MaxPathLen)
}

// PoolMissingError: a thin class's pool is not in its volume group (lvmd does not make it:
// the node's administrator does, with lvcreate -T).
type PoolMissingError struct{ Pool, VolumeGroup string }

func (e *PoolMissingError) Error() string {
	return fmt.Sprintf("thin pool %s does not exist in volume group %s", e.Pool, e.VolumeGroup)
}

// ThickSnapshotError: CreateLVSnapshot in a thick class (TopoLVM makes thin snapshots only).
type ThickSnapshotError struct{ DeviceClass string }

func (e *ThickSnapshotError) Error() string {
	return "device class " + e.DeviceClass + " is not thin: snapshots are made of thin volumes only"
}

// SnapshotSizeError: a snapshot smaller than its source.
type SnapshotSizeError struct{ Source, Requested uint64 }

func (e *SnapshotSizeError) Error() string {
	return fmt.Sprintf("requested size %d is smaller than the source volume's %d", e.Requested, e.Source)
}
