package grpc

import (
	"context"
	"fmt"
	"log/slog"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// LVServer implements proto.LVService: validate → volume.Service or backup.Runner → toStatus.
type LVServer struct {
	lvmdpb.UnimplementedLVServiceServer
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

// CreateLV creates a volume, empty or (with data_source.s3) restored from a backup.
func (s *LVServer) CreateLV(ctx context.Context, req *lvmdpb.CreateLVRequest) (*lvmdpb.CreateLVResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	if err := tags(req.GetTags()); err != nil {
		return nil, err
	}
	size, err := gib(req.GetSizeGb(), false)
	if err != nil {
		return nil, err
	}
	create := volume.CreateRequest{Name: req.GetName(), Size: size, Tags: req.GetTags(), DeviceClass: req.GetDeviceClass()}
	var vol volume.Volume
	if ds := req.GetDataSource(); ds != nil {
		target, err := toTarget(fieldS3, s.s3Default.apply(ds.GetS3()))
		if err != nil {
			return nil, err
		}
		vol, err = s.jobs.Restore(ctx, backup.RestoreRequest{Volume: create, Target: target, Synchronous: ds.GetSynchronousRestore()})
		if err != nil {
			return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "target", target)
		}
	} else if vol, _, err = s.volumes.Create(ctx, create); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
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

// ResizeLV grows a volume to size_gb; the same size is a no-op, a smaller one OutOfRange.
func (s *LVServer) ResizeLV(ctx context.Context, req *lvmdpb.ResizeLVRequest) (*lvmdpb.Empty, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	size, err := gib(req.GetSizeGb(), true)
	if err != nil {
		return nil, err
	}
	if _, err := s.volumes.Resize(ctx, req.GetDeviceClass(), req.GetName(), size); err != nil {
		return nil, toStatus(ctx, s.log, err, "volume", req.GetName(), "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.Empty{}, nil
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

func toLogicalVolume(v volume.Volume) *lvmdpb.LogicalVolume {
	return &lvmdpb.LogicalVolume{Name: v.Name, SizeGb: v.Size >> 30, DevMajor: v.Major, DevMinor: v.Minor, Tags: v.Tags}
}
