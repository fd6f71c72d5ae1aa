package app_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
)

// recorder remembers the metadata of the last call that reached a backend.
type recorder struct {
	mu   sync.Mutex
	last metadata.MD
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) server(t *testing.T) *grpc.Server {
	t.Helper()
	return grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			r.record(ctx)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			r.record(ss.Context())
			return h(srv, ss)
		}))
}

func (r *recorder) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	r.last = md.Copy()
	r.mu.Unlock()
}

// take returns and forgets the last call's metadata (nil when no call arrived).
func (r *recorder) take() metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	md := r.last
	r.last = nil
	return md
}

type statsBackend struct {
	statspb.UnimplementedStatsServiceServer
}

func (statsBackend) GetClusterStats(context.Context, *statspb.GetClusterStatsRequest) (*statspb.GetClusterStatsResponse, error) {
	return &statspb.GetClusterStatsResponse{}, nil
}

// freeBytes is what the lvmd backend reports, so a test sees the answer came from it.
const freeBytes = 4242

// vgBackend answers GetFreeBytes and streams Watch: watchCount messages, watchGap apart.
type vgBackend struct {
	lvmdpb.UnimplementedVGServiceServer
}

const (
	watchCount = 6
	watchGap   = 150 * time.Millisecond
)

func (*vgBackend) GetFreeBytes(context.Context, *lvmdpb.GetFreeBytesRequest) (*lvmdpb.GetFreeBytesResponse, error) {
	return &lvmdpb.GetFreeBytesResponse{FreeBytes: freeBytes}, nil
}

// Watch sends watchCount messages, or as many as the call's x-watch-count asks for.
func (*vgBackend) Watch(_ *lvmdpb.Empty, ss grpc.ServerStreamingServer[lvmdpb.WatchResponse]) error {
	n := watchCount
	if md, _ := metadata.FromIncomingContext(ss.Context()); len(md.Get("x-watch-count")) == 1 {
		n, _ = strconv.Atoi(md.Get("x-watch-count")[0])
	}
	for i := range n {
		if i > 0 {
			select {
			case <-time.After(watchGap):
			case <-ss.Context().Done():
				return ss.Context().Err()
			}
		}
		if err := ss.Send(&lvmdpb.WatchResponse{FreeBytes: uint64(freeBytes + i)}); err != nil {
			return err
		}
	}
	return nil
}
