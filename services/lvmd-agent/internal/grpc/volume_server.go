package grpc

import (
	"context"
	"log/slog"

	volumespb "github.com/plinth-dev/plinth/libs/api/plinth/lvmd/v1"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// VolumeServer implements plinth.lvmd.v1.VolumeService: the node's volumes with their volume
// group, device path, exact size and holder, read from lvm at each call.
type VolumeServer struct {
	volumespb.UnimplementedVolumeServiceServer
	volumes *volume.Service
	s3      *S3Default
	log     *slog.Logger
}

// NewVolumeServer serves volumes; s3 (may be nil) is the default backup store it names.
func NewVolumeServer(volumes *volume.Service, s3 *S3Default, log *slog.Logger) *VolumeServer {
	return &VolumeServer{volumes: volumes, s3: s3, log: log}
}

// GetVolume returns one volume, looked up in every class when the request names none.
func (s *VolumeServer) GetVolume(ctx context.Context, req *volumespb.GetVolumeRequest) (*volumespb.GetVolumeResponse, error) {
	if err := lvName(fieldName, req.GetName()); err != nil {
		return nil, err
	}
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	d, err := s.volumes.Describe(ctx, req.GetDeviceClass(), req.GetName())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "GetVolume", "device_class", input.Quote(req.GetDeviceClass()))
	}
	resp := &volumespb.GetVolumeResponse{Volume: volumePB(d)}
	if s.s3 != nil {
		resp.DefaultBackupEndpoint, resp.DefaultBackupBucket = s.s3.Endpoint, s.s3.Bucket
	}
	return resp, nil
}

// ListVolumes returns a class's volumes in detail.
func (s *VolumeServer) ListVolumes(ctx context.Context, req *volumespb.ListVolumesRequest) (*volumespb.ListVolumesResponse, error) {
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	ds, err := s.volumes.DescribeAll(ctx, req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "rpc", "ListVolumes", "device_class", input.Quote(req.GetDeviceClass()))
	}
	resp := &volumespb.ListVolumesResponse{Volumes: make([]*volumespb.Volume, len(ds))}
	for i, d := range ds {
		resp.Volumes[i] = volumePB(d)
	}
	return resp, nil
}

func volumePB(d volume.Detail) *volumespb.Volume {
	return &volumespb.Volume{
		Name: d.Name, DeviceClass: d.DeviceClass, VolumeGroup: d.VolumeGroup, SizeBytes: d.Size,
		DevicePath: d.Path, DevMajor: d.Major, DevMinor: d.Minor, Active: d.Major != 0 || d.Minor != 0,
		Tags: d.Tags, InUseBy: d.InUseBy,
	}
}
