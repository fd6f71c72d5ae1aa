package grpc

import (
	"context"
	"fmt"
	"log/slog"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// LVServer implements proto.LVService for both generations of its wire (see wire.go and
// lv_service.go): validate → volume.Service or backup.Runner → toStatus.
type LVServer struct {
	volumes   *volume.Service
	jobs      *backup.Runner
	s3Default *S3Default
	log       *slog.Logger
}

// NewLVServer serves volumes and jobs. s3Default, when not nil, completes backup and restore
// requests that name no S3 endpoint and no credentials.
func NewLVServer(volumes *volume.Service, jobs *backup.Runner, s3Default *S3Default, log *slog.Logger) *LVServer {
	return &LVServer{volumes: volumes, jobs: jobs, s3Default: s3Default, log: log}
}

// CreateLV creates a volume, empty or (with data_source.s3) restored from a backup. raw holds
// the request's bytes, of either generation, as unknown fields.
func (s *LVServer) CreateLV(ctx context.Context, raw *lvmdpb.Empty) (*lvmdpb.CreateLVResponse, error) {
	req, err := decodeCreateLV(raw.ProtoReflect().GetUnknown())
	if err != nil {
		return nil, err
	}
	if err := lvName(fieldName, req.name); err != nil {
		return nil, err
	}
	if err := className(req.deviceClass); err != nil {
		return nil, err
	}
	if err := tags(req.tags); err != nil {
		return nil, err
	}
	if err := input.String(fieldOptionClass, req.optionClass, deviceclass.MaxOptionClassNameLen); err != nil {
		return nil, err
	}
	size, err := sizeOf(req.sizeGB, req.sizeBytes, false)
	if err != nil {
		return nil, err
	}
	create := volume.CreateRequest{Name: req.name, Size: size, Tags: req.tags, DeviceClass: req.deviceClass, OptionClass: req.optionClass}
	var vol volume.Volume
	if ds := req.dataSource; ds != nil {
		target, err := toTarget(fieldS3, s.s3Default.apply(ds.GetS3()))
		if err != nil {
			return nil, err
		}
		vol, err = s.jobs.Restore(ctx, backup.RestoreRequest{Volume: create, Target: target, Synchronous: ds.GetSynchronousRestore()})
		if err != nil {
			return nil, toStatus(ctx, s.log, err, "volume", req.name, "target", target)
		}
	} else if vol, _, err = s.volumes.Create(ctx, create); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.name, "device_class", input.Quote(req.deviceClass))
	}
	return &lvmdpb.CreateLVResponse{Volume: toLogicalVolume(vol)}, nil
}

// RemoveLV removes a volume; one that does not exist is already removed.
func (s *LVServer) RemoveLV(ctx context.Context, req *lvmdpb.RemoveLVRequest) (*lvmdpb.Empty, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if err := s.volumes.Remove(ctx, req.GetDeviceClass(), req.GetName()); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.Empty{}, nil
}

// ResizeLV grows a volume: to exactly size_gb (the same size a no-op, a smaller one
// OutOfRange: lvmd's rule), or to at least size_bytes (a volume already that large is left
// as it is: TopoLVM v0.36.5's rule). The answer carries the size after the call; the fork's
// clients read it as Empty.
func (s *LVServer) ResizeLV(ctx context.Context, req *lvmdpb.ResizeLVRequest) (*lvmdpb.ResizeLVResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	size, err := sizeOf(req.GetSizeGb(), req.GetSizeBytes(), true)
	if err != nil {
		return nil, err
	}
	resize := volume.ResizeRequest{DeviceClass: req.GetDeviceClass(), Name: req.GetName(), Size: size, AtLeast: req.GetSizeBytes() != 0}
	_, after, err := s.volumes.Resize(ctx, resize)
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.ResizeLVResponse{SizeBytes: int64(after)}, nil
}

// CreateLVSnapshot makes a thin snapshot of a thin volume, activated read-only ("ro") or
// read-write ("rw"), of size_bytes or size_gb (at least the source's; 0 is the source's):
// TopoLVM v0.13's call, which its node plugin makes for a VolumeSnapshot and a PVC cloned from
// one.
func (s *LVServer) CreateLVSnapshot(ctx context.Context, req *lvmdpb.CreateLVSnapshotRequest) (*lvmdpb.CreateLVSnapshotResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := lvName(fieldSource, req.GetSourceVolume()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if err := tags(req.GetTags()); err != nil {
		return nil, err
	}
	readOnly, err := accessType(req.GetAccessType())
	if err != nil {
		return nil, err
	}
	size, err := sizeOf(req.GetSizeGb(), req.GetSizeBytes(), true) // 0: the source's size
	if err != nil {
		return nil, err
	}
	snap, _, err := s.volumes.Snapshot(ctx, volume.SnapshotRequest{Name: req.GetName(), DeviceClass: req.GetDeviceClass(),
		Source: req.GetSourceVolume(), Tags: req.GetTags(), Size: size, ReadOnly: readOnly})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "source", req.GetSourceVolume(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.CreateLVSnapshotResponse{Snapshot: toLogicalVolume(snap)}, nil
}

// CreateBackup starts a backup of volume_handle to data_source.s3, or reports the state of
// the one already started under this name.
func (s *LVServer) CreateBackup(ctx context.Context, req *lvmdpb.CreateBackupRequest) (*lvmdpb.CreateBackupResponse, error) {
	b := req.GetBackup()
	if b == nil {
		return nil, input.Invalid("backup", "is required")
	}
	if err := input.Required("backup.name", b.GetName(), input.MaxName); err != nil {
		return nil, err
	}
	if err := lvName("backup.volume_handle", b.GetVolumeHandle()); err != nil {
		return nil, err
	}
	target, err := toTarget("backup.data_source.s3", s.s3Default.apply(b.GetDataSource().GetS3()))
	if err != nil {
		return nil, err
	}
	job, err := s.jobs.Backup(ctx, backup.BackupRequest{Name: b.GetName(), VolumeHandle: b.GetVolumeHandle(), Target: target})
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "backup", input.Quote(b.GetName()), "volume", b.GetVolumeHandle(), "target", target)
	}
	return &lvmdpb.CreateBackupResponse{BackupState: toBackupState(job)}, nil
}

func toBackupState(j backup.Job) *lvmdpb.BackupState {
	st := &lvmdpb.BackupState{Name: j.Name, Msg: j.Message}
	switch j.State {
	case backup.Complete:
		st.State = lvmdpb.StateType_COMPLETE
	case backup.Failed:
		st.State = lvmdpb.StateType_ERROR
	default:
		st.State = lvmdpb.StateType_INPROGRESS
		st.Msg = fmt.Sprintf("copied %d of %d bytes", j.BytesDone, j.SizeBytes)
	}
	return st
}

// toLogicalVolume answers both generations: size_gb (whole GiB, rounded down as TopoLVM
// v0.23 to v0.36.4's lvmd did) for the fork's clients, size_bytes, path and attr for
// upstream's.
func toLogicalVolume(v volume.Volume) *lvmdpb.LogicalVolume {
	return &lvmdpb.LogicalVolume{Name: v.Name, SizeGb: v.Size >> 30, DevMajor: v.Major, DevMinor: v.Minor, Tags: v.Tags,
		SizeBytes: int64(v.Size), Path: v.Path, Attr: v.Attr}
}
