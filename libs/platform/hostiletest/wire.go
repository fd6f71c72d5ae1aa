package hostiletest

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// probeUndecodable sends request bodies that are not a message of the method's input type —
// truncated protobuf, and invalid UTF-8 in a string field that must hold UTF-8 — as raw
// bytes: the service must answer InvalidArgument (grpc-go's own answer is Internal).
func probeUndecodable(t *testing.T, tg Target, full string, md protoreflect.MethodDescriptor) {
	for _, b := range undecodable(md.Input()) {
		code, msg := callRaw(tg, full, md, b.body)
		checkRefused(t, tg, b.name, code, msg)
	}
}

// probeOversized sends, for each bounded list or map field (libs/platform/input/bounds)
// reachable through singular fields, a request holding one entry more than the bound: the
// service must answer InvalidArgument.
func probeOversized(t *testing.T, tg Target, full string, md protoreflect.MethodDescriptor) {
	done := map[protoreflect.FullName]bool{}
	for _, path := range boundedPaths(md.Input()) {
		last := path[len(path)-1]
		if done[last.FullName()] {
			continue // one probe per field, by the first path that reaches it
		}
		done[last.FullName()] = true
		m := dynamicpb.NewMessage(md.Input())
		if !fill(m, path, bounds.Max(last)+1) {
			continue
		}
		code, msg := call(tg, full, md, m, tg.Metadata)
		checkRefused(t, tg, fmt.Sprintf("%d entries in %s (bound %d)", bounds.Max(last)+1, pathName(path), bounds.Max(last)), code, msg)
	}
}

// checkRefused fails t unless a probe was answered InvalidArgument with a short message.
func checkRefused(t *testing.T, tg Target, probe string, code codes.Code, msg string) {
	t.Helper()
	if code != codes.InvalidArgument {
		t.Errorf("%s: answered %v %q; want InvalidArgument", probe, code, clip(msg))
	}
	check(t, Target{Allowed: []codes.Code{code}}, probe, code, msg) // the length rule
}

type rawBody struct {
	name string
	body []byte
}

// undecodable are bodies that fail to decode as in: each is checked against a local decode,
// so a body the message type would accept (a string field without UTF-8 validation) is not
// sent.
func undecodable(in protoreflect.MessageDescriptor) []rawBody {
	// Field 1 announces 5 bytes of which one follows: truncated whatever field 1 is.
	cands := []rawBody{{"malformed protobuf", []byte{0x0a, 0x05, 'a'}}}
	fields := in.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Kind() != protoreflect.StringKind || f.IsMap() {
			continue
		}
		b := protowire.AppendTag(nil, f.Number(), protowire.BytesType)
		b = protowire.AppendBytes(b, []byte("probe\xff\xfe"))
		cands = append(cands, rawBody{"invalid UTF-8 in " + string(f.Name()), b})
		break
	}
	var out []rawBody
	for _, c := range cands {
		if proto.Unmarshal(c.body, dynamicpb.NewMessage(in)) != nil {
			out = append(out, c)
		}
	}
	return out
}

// RawCodec sends a *[]byte request body as it is, so a test can put bytes on the wire that
// no protobuf encoder produces; protobuf messages (the answers) it encodes and decodes as
// grpc-go's proto codec does. Use it with grpc.ForceCodecV2.
type RawCodec struct{}

// Marshal sends *[]byte as is.
func (RawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(*[]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
	}
	return encoding.GetCodecV2(protocodec.Name).Marshal(v)
}

// Unmarshal reads into *[]byte as is.
func (RawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if b, ok := v.(*[]byte); ok {
		*b = data.Materialize()
		return nil
	}
	return encoding.GetCodecV2(protocodec.Name).Unmarshal(data, v)
}

// Name is "proto": the content type a server expects.
func (RawCodec) Name() string { return protocodec.Name }

// callRaw is call with a hand-built request body.
func callRaw(tg Target, full string, md protoreflect.MethodDescriptor, body []byte) (codes.Code, string) {
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), tg.Metadata), tg.Timeout)
	defer cancel()
	codec := grpc.ForceCodecV2(RawCodec{})
	if !md.IsStreamingClient() && !md.IsStreamingServer() {
		err := tg.Conn.Invoke(ctx, full, &body, dynamicpb.NewMessage(md.Output()), codec)
		return status.Code(err), status.Convert(err).Message()
	}
	desc := &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}
	st, err := tg.Conn.NewStream(ctx, desc, full, codec)
	if err != nil {
		return status.Code(err), status.Convert(err).Message()
	}
	_ = st.SendMsg(&body) // a failed send shows in the stream's end
	_ = st.CloseSend()
	return streamEnd(st, md.Output())
}

// boundedPaths lists the paths of list and map fields with a bound, reachable from md
// through singular message fields.
func boundedPaths(md protoreflect.MessageDescriptor) [][]protoreflect.FieldDescriptor {
	return fieldPaths(md, nil, 0,
		func(f protoreflect.FieldDescriptor) bool { return (f.IsList() || f.IsMap()) && bounds.Max(f) > 0 },
		func(protoreflect.FieldDescriptor) bool { return true })
}

// fill puts n entries into the list or map at path in m; false when n distinct keys cannot
// exist (a bool-keyed map).
func fill(m protoreflect.Message, path []protoreflect.FieldDescriptor, n int) bool {
	for _, f := range path[:len(path)-1] {
		m = m.Mutable(f).Message()
	}
	f := path[len(path)-1]
	if f.IsList() {
		l := m.Mutable(f).List()
		for range n {
			if f.Message() != nil {
				l.Append(l.NewElement())
			} else {
				l.Append(scalar(f.Kind(), 0))
			}
		}
		return true
	}
	if f.MapKey().Kind() == protoreflect.BoolKind {
		return false
	}
	mp := m.Mutable(f).Map()
	for i := range n {
		k := scalar(f.MapKey().Kind(), i).MapKey()
		if f.MapValue().Message() != nil {
			mp.Set(k, mp.NewValue())
		} else {
			mp.Set(k, scalar(f.MapValue().Kind(), 0))
		}
	}
	return true
}

// scalar is the i-th distinct value of kind k (strings "probe-0", "probe-1", …).
func scalar(k protoreflect.Kind, i int) protoreflect.Value {
	switch k {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("probe-" + strconv.Itoa(i))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(strconv.Itoa(i)))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(i%2 == 1)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(i))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(i))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(i))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(i))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(i))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(i))
	default:
		return protoreflect.ValueOfFloat64(float64(i))
	}
}
