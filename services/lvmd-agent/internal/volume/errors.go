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
