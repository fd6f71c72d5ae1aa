package grpc

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
)

// lvService is what LVServiceDesc calls: LVServer's methods.
type lvService interface {
	CreateLV(context.Context, *lvmdpb.Empty) (*lvmdpb.CreateLVResponse, error)
	RemoveLV(context.Context, *lvmdpb.RemoveLVRequest) (*lvmdpb.Empty, error)
	ResizeLV(context.Context, *lvmdpb.ResizeLVRequest) (*lvmdpb.ResizeLVResponse, error)
	CreateBackup(context.Context, *lvmdpb.CreateBackupRequest) (*lvmdpb.CreateBackupResponse, error)
	CreateLVSnapshot(context.Context, *lvmdpb.CreateLVSnapshotRequest) (*lvmdpb.CreateLVSnapshotResponse, error)
}

var _ lvService = (*LVServer)(nil)

// LVServiceDesc is proto.LVService as the agent serves it to both generations of TopoLVM's
// wire. The generated description cannot: it decodes CreateLV into the fork's
// CreateLVRequest before the agent sees the bytes, and its ResizeLV answers Empty where
// upstream reads ResizeLVResponse. Here CreateLV's request is decoded into a message without
// fields, which keeps every byte as unknown fields for decodeCreateLV, and ResizeLV answers
// ResizeLVResponse (which the fork's clients read as Empty: the field is unknown to them).
// Method names and the service name are the generated ones, so the paths on the wire, the
// interceptors and reflection see proto.LVService as before.
var LVServiceDesc = grpc.ServiceDesc{
	ServiceName: lvmdpb.LVService_ServiceDesc.ServiceName,
	HandlerType: (*lvService)(nil),
	Methods: []grpc.MethodDesc{
		unary("CreateLV", lvService.CreateLV),
		unary("RemoveLV", lvService.RemoveLV),
		unary("ResizeLV", lvService.ResizeLV),
		unary("CreateBackup", lvService.CreateBackup),
		unary("CreateLVSnapshot", lvService.CreateLVSnapshot),
	},
	Metadata: lvmdpb.LVService_ServiceDesc.Metadata,
}

// RegisterLVService serves srv as proto.LVService.
func RegisterLVService(r grpc.ServiceRegistrar, srv *LVServer) {
	r.RegisterService(&LVServiceDesc, srv)
}

// unary is a method of LVServiceDesc: decode the request into a new Req, run the server's
// interceptors, call method.
func unary[Req any, Resp any, PReq interface {
	*Req
	lvmdpbMessage
}](name string, method func(lvService, context.Context, PReq) (Resp, error)) grpc.MethodDesc {
	full := "/" + lvmdpb.LVService_ServiceDesc.ServiceName + "/" + name
	return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		req := PReq(new(Req))
		if err := dec(req); err != nil {
			return nil, err
		}
		s := srv.(lvService)
		if icpt == nil {
			return method(s, ctx, req)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: full}
		out, err := icpt(ctx, req, info, func(ctx context.Context, r any) (any, error) { return method(s, ctx, r.(PReq)) })
		if _, raw := any(req).(*lvmdpb.Empty); raw && name == "CreateLV" {
			err = nameRequest(err)
		}
		return out, err
	}}
}

// nameRequest names CreateLV's request in the server codec's refusal of bytes that are not a
// protobuf message at all: it decoded them as the field-less holder, not as what the client
// sent.
func nameRequest(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	const holder = "as proto.Empty:"
	if msg := st.Message(); strings.Contains(msg, holder) {
		return status.Error(codes.InvalidArgument, strings.Replace(msg, holder, "as proto.CreateLVRequest:", 1))
	}
	return err
}

// lvmdpbMessage is what the generated request types are: protobuf messages.
type lvmdpbMessage interface{ ProtoMessage() }
