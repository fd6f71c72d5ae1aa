package grpc

import (
	"context"
	"log/slog"
	"time"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// VGServer implements proto.VGService.
type VGServer struct {
	lvmdpb.UnimplementedVGServiceServer
	volumes  *volume.Service
	interval time.Duration
	lifetime context.Context
	log      *slog.Logger
}

// NewVGServer serves volumes; Watch streams resend every interval and end with lifetime
// (the service's shutdown), so a graceful stop does not wait for them.
func NewVGServer(volumes *volume.Service, interval time.Duration, lifetime context.Context, log *slog.Logger) *VGServer {
	return &VGServer{volumes: volumes, interval: interval, lifetime: lifetime, log: log}
}

// GetLVList lists a device class's volumes.
func (s *VGServer) GetLVList(ctx context.Context, req *lvmdpb.GetLVListRequest) (*lvmdpb.GetLVListResponse, error) {
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	vols, err := s.volumes.List(ctx, req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "device_class", input.Quote(req.GetDeviceClass()))
	}
	resp := &lvmdpb.GetLVListResponse{Volumes: make([]*lvmdpb.LogicalVolume, 0, len(vols))}
	for _, v := range vols {
		resp.Volumes = append(resp.Volumes, toLogicalVolume(v))
	}
	return resp, nil
}

// GetFreeBytes is what a device class may still allocate: free space minus spare.
func (s *VGServer) GetFreeBytes(ctx context.Context, req *lvmdpb.GetFreeBytesRequest) (*lvmdpb.GetFreeBytesResponse, error) {
	if err := className(req.GetDeviceClass()); err != nil {
		return nil, err
	}
	free, err := s.volumes.FreeBytes(ctx, req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(ctx, s.log, err, "device_class", input.Quote(req.GetDeviceClass()))
	}
	return &lvmdpb.GetFreeBytesResponse{FreeBytes: free}, nil
}

// Watch streams every class's free space (minus spare, like GetFreeBytes): at once, after
// every change (several changes between two sends coalesce) and every interval.
func (s *VGServer) Watch(_ *lvmdpb.Empty, stream lvmdpb.VGService_WatchServer) error {
	ctx := stream.Context()
	changed, cancel := s.volumes.Subscribe()
	defer cancel()
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		if err := s.send(stream); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.lifetime.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

func (s *VGServer) send(stream lvmdpb.VGService_WatchServer) error {
	ctx := stream.Context()
	caps, err := s.volumes.Capacities(ctx)
	if err != nil {
		return toStatus(ctx, s.log, err)
	}
	return stream.Send(WatchResponse(caps))
}

// WatchResponse is lvmd's Watch message for the classes' capacities: free_bytes of the
// default class and one item per class, with the volume group's size_bytes (upstream
// v0.8.2; the fork's clients skip it). A thin class's item is lvmd's: the group's free and
// size bytes, and thin_pool with the pool's fill, size and overprovisioned free space (what
// TopoLVM's node annotates for the scheduler; the class's free space, as GetFreeBytes).
func WatchResponse(caps []volume.Capacity) *lvmdpb.WatchResponse {
	resp := &lvmdpb.WatchResponse{Items: make([]*lvmdpb.WatchItem, 0, len(caps))}
	for _, c := range caps {
		if c.Default {
			resp.FreeBytes = c.Free
		}
		item := &lvmdpb.WatchItem{DeviceClass: c.DeviceClass, FreeBytes: c.Free, SizeBytes: c.Size}
		if p := c.Pool; p != nil {
			item.FreeBytes, item.SizeBytes = c.GroupFree, c.GroupSize
			item.ThinPool = &lvmdpb.ThinPoolItem{DataPercent: p.DataPercent, MetadataPercent: p.MetadataPercent,
				OverprovisionBytes: c.Free, SizeBytes: p.Size}
		}
		resp.Items = append(resp.Items, item)
	}
	return resp
}
