package app_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/server"
)

// recorder remembers the metadata of the last call that reached a backend.
type recorder struct {
	mu   sync.Mutex
	last metadata.MD
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) server(t *testing.T) *grpc.Server {
	t.Helper()
	// The request checks every Plinth server has (undecodable requests and lists over their
	// bounds are InvalidArgument), so the gateway is seen relaying a backend's refusal.
	return grpc.NewServer(append(server.RequestChecks(nil),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			r.record(ctx)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			r.record(ss.Context())
			return h(srv, ss)
		}))...)
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

// The stats backend answers Koor's dashboard calls with every field set (fill), so a client
// sees every JSON name the answer can carry.
func (statsBackend) GetClusterStats(context.Context, *statspb.GetClusterStatsRequest) (*statspb.GetClusterStatsResponse, error) {
	return fill(&statspb.GetClusterStatsResponse{}), nil
}

func (statsBackend) GetClusterRadar(context.Context, *statspb.GetClusterRadarRequest) (*statspb.GetClusterRadarResponse, error) {
	return fill(&statspb.GetClusterRadarResponse{}), nil
}

func (statsBackend) GetClusterResources(context.Context, *statspb.GetClusterResourcesRequest) (*statspb.GetClusterResourcesResponse, error) {
	return fill(&statspb.GetClusterResourcesResponse{}), nil
}

func (statsBackend) GetClusterNodes(context.Context, *statspb.GetClusterNodesRequest) (*statspb.GetClusterNodesResponse, error) {
	return fill(&statspb.GetClusterNodesResponse{}), nil
}

func (statsBackend) GetKoorCluster(context.Context, *statspb.GetKoorClusterRequest) (*statspb.GetKoorClusterResponse, error) {
	return fill(&statspb.GetKoorClusterResponse{}), nil
}

// fill sets every field of m, nested messages and one element of every list included, to a
// value that is not its default: 7, "x", true, an enum's second value, 2024-01-02 for a
// google.protobuf.Timestamp (which proto JSON writes as one string).
func fill[M proto.Message](m M) M {
	fillMessage(m.ProtoReflect(), 0)
	return m
}

func fillMessage(m protoreflect.Message, depth int) {
	if m.Descriptor().FullName() == "google.protobuf.Timestamp" {
		proto.Merge(m.Interface(), timestamppb.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			continue // none in the dashboard's answers
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				e := l.NewElement()
				fillMessage(e.Message(), depth+1)
				l.Append(e)
			} else {
				l.Append(scalar(fd))
			}
		case fd.Message() != nil:
			if depth < 8 {
				fillMessage(m.Mutable(fd).Message(), depth+1)
			}
		default:
			m.Set(fd, scalar(fd))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(min(1, vals.Len()-1)).Number())
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0.5)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	default:
		return protoreflect.ValueOfUint64(7)
	}
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
