package proxy

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as it came off the wire, never decoded: the proxy forwards the
// bytes it received, so it needs no descriptor and cannot drop fields it does not know.
type frame struct {
	data mem.BufferSlice
}

// codec passes frames through and hands every other message (the gateway's own health and
// reflection services) to the proto codec. It names itself "proto" so responses keep the
// content type the client asked for.
type codec struct {
	proto encoding.CodecV2
}

func newCodec() codec { return codec{proto: encoding.GetCodecV2(proto.Name)} }

// Marshal hands a frame's buffers to grpc-go, which frees them once written.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*frame); ok {
		data := f.data
		f.data = nil
		return data, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal keeps a reference to the received buffers: grpc-go frees its own once Unmarshal
// returns, and the frame lives until it is sent on.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*frame); ok {
		data.Ref()
		f.data = data
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

// Name is the content subtype.
func (codec) Name() string { return proto.Name }
