// Package hostiletest drives a running gRPC service as a hostile client would, for each
// service's own test tree: every method of the named services gets huge and NUL-laden strings
// in each string field, unknown fields, bodies that are not protobuf or hold invalid UTF-8 and
// every bounded list or map one entry over its bound (these three must be answered
// InvalidArgument; wire.go), garbage and oversized metadata, and every streaming
// method a stream cut off half way. The service must answer each probe with a documented code
// (never Internal or Unknown), quote at most a short prefix of the input in its error, and
// still answer health checks afterwards.
package hostiletest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// HugeLen is the size of the oversized strings the probes send (1 MiB).
const HugeLen = 1 << 20

// MaxMessageLen bounds an error message the service may answer a probe with: enough for a
// field name, a reason and a quoted prefix, far less than the input.
const MaxMessageLen = 1 << 10

// Target is the service under probe.
type Target struct {
	// Conn reaches the service.
	Conn *grpc.ClientConn
	// Services are full gRPC service names ("hashicorp.vagrant.Vagrant"); their descriptors
	// must be registered (import the generated package).
	Services []string
	// Metadata is sent with every probe (e.g. a valid token), so probes reach the handlers.
	Metadata metadata.MD
	// Skip lists full method names ("/pkg.Service/Method") not to probe, with the reason in
	// the caller's comment (e.g. a method that blocks until a job exists).
	Skip []string
	// Allowed are the codes a probe may be answered with; nil means Default.
	Allowed []codes.Code
	// Timeout bounds each probe; default 10s.
	Timeout time.Duration
}

// Default are the codes a service may answer hostile input with: refusals that tell the
// client what to do. OK is allowed (a field the method ignores), as is DeadlineExceeded for
// long-lived streams the probe cuts off.
var Default = []codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
	codes.FailedPrecondition, codes.OutOfRange, codes.Unauthenticated, codes.PermissionDenied,
	codes.ResourceExhausted, codes.Unimplemented, codes.Canceled, codes.DeadlineExceeded, codes.Aborted}

// Run probes every method of tg.Services and fails t for each answer outside tg.Allowed, each
// over-long message, and a service that stops answering health checks.
func Run(t *testing.T, tg Target) {
	t.Helper()
	if tg.Allowed == nil {
		tg.Allowed = Default
	}
	if tg.Timeout == 0 {
		tg.Timeout = 10 * time.Second
	}
	skip := map[string]bool{}
	for _, m := range tg.Skip {
		skip[m] = true
	}
	for _, name := range tg.Services {
		methods := serviceMethods(t, name)
		for i := range methods.Len() {
			md := methods.Get(i)
			full := "/" + name + "/" + string(md.Name())
			if skip[full] {
				continue
			}
			t.Run(string(md.Name()), func(t *testing.T) { probeMethod(t, tg, full, md) })
		}
	}
	t.Run("metadata", func(t *testing.T) { probeMetadata(t, tg) })
	assertServing(t, tg)
}

// serviceMethods returns the methods of a registered service, failing t for a name that is
// not one.
func serviceMethods(t *testing.T, name string) protoreflect.MethodDescriptors {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatalf("service %s is not registered: %v", name, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		t.Fatalf("%s is not a service", name)
	}
	return sd.Methods()
}

// probeMethod sends every request variant to one method.
func probeMethod(t *testing.T, tg Target, full string, md protoreflect.MethodDescriptor) {
	for _, req := range variants(md.Input()) {
		code, msg := call(tg, full, md, req.msg, tg.Metadata)
		check(t, tg, req.name, code, msg)
	}
	probeUndecodable(t, tg, full, md)
	probeOversized(t, tg, full, md)
	if md.IsStreamingClient() || md.IsStreamingServer() {
		cutStream(t, tg, full, md)
	}
}

// check fails t when an answer is not allowed or quotes too much.
func check(t *testing.T, tg Target, probe string, code codes.Code, msg string) {
	t.Helper()
	allowed := false
	for _, c := range tg.Allowed {
		allowed = allowed || c == code
	}
	if !allowed {
		t.Errorf("%s: answered %v %q; want one of %v", probe, code, clip(msg), tg.Allowed)
	}
	if len(msg) > MaxMessageLen {
		t.Errorf("%s: the error message is %d bytes; it must quote at most a short prefix of the input", probe, len(msg))
	}
}

// call invokes a unary method, or opens a stream, sends req and reads until the end.
func call(tg Target, full string, md protoreflect.MethodDescriptor, req proto.Message, meta metadata.MD) (codes.Code, string) {
	ctx, cancel := context.WithTimeout(context.Background(), tg.Timeout)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, meta)
	if !md.IsStreamingClient() && !md.IsStreamingServer() {
		out := dynamicpb.NewMessage(md.Output())
		err := tg.Conn.Invoke(ctx, full, req, out)
		return status.Code(err), status.Convert(err).Message()
	}
	desc := &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}
	// A stream answers within a short time or is cut: long-lived streams are legitimate.
	ctx, cancelStream := context.WithTimeout(ctx, time.Second)
	defer cancelStream()
	st, err := tg.Conn.NewStream(ctx, desc, full)
	if err != nil {
		return status.Code(err), status.Convert(err).Message()
	}
	if err := st.SendMsg(req); err != nil {
		return streamEnd(st, md.Output())
	}
	_ = st.CloseSend()
	return streamEnd(st, md.Output())
}

// streamEnd reads a stream until it ends and returns how it ended.
func streamEnd(st grpc.ClientStream, out protoreflect.MessageDescriptor) (codes.Code, string) {
	for {
		if err := st.RecvMsg(dynamicpb.NewMessage(out)); err != nil {
			if errors.Is(err, io.EOF) {
				return codes.OK, ""
			}
			s := status.Convert(err)
			return s.Code(), s.Message()
		}
	}
}

// cutStream opens a stream, starts a message and drops the connection's stream half way.
func cutStream(t *testing.T, tg Target, full string, md protoreflect.MethodDescriptor) {
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(context.Background(), tg.Metadata))
	desc := &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}
	st, err := tg.Conn.NewStream(ctx, desc, full)
	if err == nil && md.IsStreamingClient() {
		_ = st.SendMsg(dynamicpb.NewMessage(md.Input()))
	}
	cancel() // the server sees the stream reset mid-conversation
	assertServing(t, tg)
}

// probeMetadata sends garbage and oversized metadata to the health service and the first
// method: the service refuses or ignores it and keeps answering.
func probeMetadata(t *testing.T, tg Target) {
	garbage := []metadata.MD{
		metadata.Pairs("authorization", "Bearer "+strings.Repeat("\xff", 8<<10)),
		metadata.Pairs("authorization", strings.Repeat("x", 12<<10)),
		metadata.Pairs("authorization", "Basic", "authorization", "Bearer", "authorization", "Bearer  "),
		metadata.Pairs("x-forwarded-for", strings.Repeat("1.2.3.4,", 1000)),
		metadata.Pairs("plinth-account-id", "forged"),
		metadata.Pairs("grpc-timeout", "garbage"),
	}
	for i, md := range garbage {
		ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), tg.Timeout)
		_, err := healthpb.NewHealthClient(tg.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if c := status.Code(err); c == codes.Unknown {
			t.Errorf("garbage metadata %d: %v", i, err)
		}
	}
	// 64 KiB of headers: refused by the server's header limit (the client learns it and gives
	// up before sending, or the server resets the stream), never processed.
	big := metadata.Pairs("x-padding", strings.Repeat("p", 64<<10))
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), big), tg.Timeout)
	defer cancel()
	if _, err := healthpb.NewHealthClient(tg.Conn).Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("a call with 64 KiB of metadata was served; the header list is unbounded")
	}
	assertServing(t, tg)
}

// assertServing fails t unless the service still answers health checks.
func assertServing(t *testing.T, tg Target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tg.Timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(tg.Conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("the service stopped answering health checks: %v %v", resp, err)
	}
}

// variant is one hostile request.
type variant struct {
	name string
	msg  proto.Message
}

// variants are the hostile requests for input type in: an empty request, one with an unknown
// field, and for each string field (nested up to three levels) a huge value and one with NUL
// — one field at a time, the others holding a plain value, so each hostile field gets past
// the checks of the fields before it.
func variants(in protoreflect.MessageDescriptor) []variant {
	unknown := dynamicpb.NewMessage(in)
	raw := protowire.AppendTag(nil, 9999, protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte(strings.Repeat("u", 4<<10)))
	unknown.SetUnknown(raw)
	out := []variant{{"empty request", dynamicpb.NewMessage(in)}, {"unknown field", unknown}}
	paths := stringPaths(in)
	for _, path := range paths {
		for _, v := range []struct{ name, value string }{
			{"huge", strings.Repeat("A", HugeLen)},
			{"NUL", "plinth\x00probe"},
		} {
			m := dynamicpb.NewMessage(in)
			for _, other := range paths {
				set(m, other, "probe-value")
			}
			set(m, path, v.value)
			out = append(out, variant{v.name + " " + pathName(path), m})
		}
	}
	return out
}

// stringPaths lists the paths of string fields reachable from md (not through lists, maps or
// Google's well-known types).
func stringPaths(md protoreflect.MessageDescriptor) [][]protoreflect.FieldDescriptor {
	return fieldPaths(md, nil, 0,
		func(f protoreflect.FieldDescriptor) bool { return !f.IsMap() && f.Kind() == protoreflect.StringKind },
		func(f protoreflect.FieldDescriptor) bool {
			return !strings.HasPrefix(string(f.Message().FullName()), "google.protobuf.")
		})
}

// fieldPaths lists the paths from md to the fields want accepts, going down singular message
// fields that descend accepts, at most three levels deep.
func fieldPaths(md protoreflect.MessageDescriptor, prefix []protoreflect.FieldDescriptor, depth int,
	want, descend func(protoreflect.FieldDescriptor) bool) [][]protoreflect.FieldDescriptor {
	var out [][]protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		path := append(append([]protoreflect.FieldDescriptor(nil), prefix...), f)
		switch {
		case want(f):
			out = append(out, path)
		case f.Kind() == protoreflect.MessageKind && !f.IsList() && !f.IsMap() && depth < 3 && descend(f):
			out = append(out, fieldPaths(f.Message(), path, depth+1, want, descend)...)
		}
	}
	return out
}

// set stores value at path in m, creating the messages on the way.
func set(m protoreflect.Message, path []protoreflect.FieldDescriptor, value string) {
	for _, f := range path[:len(path)-1] {
		m = m.Mutable(f).Message()
	}
	last := path[len(path)-1]
	if last.IsList() {
		list := m.Mutable(last).List()
		list.Truncate(0)
		list.Append(protoreflect.ValueOfString(value))
		return
	}
	m.Set(last, protoreflect.ValueOfString(value))
}

func pathName(path []protoreflect.FieldDescriptor) string {
	parts := make([]string, len(path))
	for i, f := range path {
		parts[i] = string(f.Name())
	}
	return strings.Join(parts, ".")
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
