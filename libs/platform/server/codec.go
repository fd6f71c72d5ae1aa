package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/platform/input/bounds"
)

// requestCodec is the codec of every Plinth gRPC server. It encodes and decodes like grpc-go's
// proto codec, except for a request it cannot decode (malformed protobuf, invalid UTF-8 in a
// string field): the client must learn that its request was wrong (InvalidArgument, naming
// the message type), and the operator must not be paged for it.
//
// grpc-go turns every error a codec returns into Internal, before any interceptor runs. So
// Unmarshal does not return the error: it empties the message and notes the error against
// it, and the server's decode interceptor (unary: the request; streams: every RecvMsg)
// takes the note and refuses the call with InvalidArgument. The interceptor runs inside
// logging and metrics, so the refusal is logged as a client error (INFO) and counted, and
// before the auth hook and the handler, so no handler ever sees a half-decoded message.
// A note lives from Unmarshal to the interceptor of the same call: grpc-go calls one right
// after the other, and nothing between them can end the call.
type requestCodec struct {
	inner encoding.CodecV2
	check func(proto.Message) error // Options.CheckRequest, or nil

	noted  atomic.Int64 // len(failed), read without the lock on every message
	mu     sync.Mutex
	failed map[any]error // message pointer → why it could not be decoded
}

// newRequestCodec wraps inner (nil: grpc-go's proto codec); check, when set, is the server's
// own check of every decoded message.
func newRequestCodec(inner encoding.CodecV2, check func(proto.Message) error) *requestCodec {
	if inner == nil {
		inner = encoding.GetCodecV2(protocodec.Name)
	}
	return &requestCodec{inner: inner, check: check, failed: map[any]error{}}
}

// RequestChecks are the options with which a gRPC server refuses, with InvalidArgument, a
// request it cannot decode or that holds a list or map over its bound
// (libs/platform/input/bounds): the codec, wrapping inner (nil: protobuf), and its
// interceptors. New gives them to every server; a server built otherwise (the gateway's,
// whose codec relays raw frames) adds them so that no interceptor before them ends a call
// early: a note its interceptor never takes would stay in memory.
func RequestChecks(inner encoding.CodecV2) []grpc.ServerOption {
	c := newRequestCodec(inner, nil)
	return []grpc.ServerOption{grpc.ForceServerCodecV2(c), grpc.ChainUnaryInterceptor(c.unary), grpc.ChainStreamInterceptor(c.stream)}
}

// Marshal encodes as the proto codec does.
func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.inner.Marshal(v) }

// Unmarshal decodes as the proto codec does; a message it cannot decode is emptied and noted.
func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.inner.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m := messageOf(v)
	if m == nil {
		return err // not a protobuf message: a programming error, let grpc-go report it
	}
	proto.Reset(m)
	c.mu.Lock()
	c.failed[v] = parseError(m, err)
	c.noted.Store(int64(len(c.failed)))
	c.mu.Unlock()
	return nil
}

// Name is the content subtype: the codec replaces the proto codec.
func (c *requestCodec) Name() string { return c.inner.Name() }

// take returns and forgets the decode error noted against v, nil when v was decoded.
func (c *requestCodec) take(v any) error {
	if c.noted.Load() == 0 {
		return nil // the common case: every message decoded
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err, ok := c.failed[v]
	if ok {
		delete(c.failed, v)
		c.noted.Store(int64(len(c.failed)))
	}
	return err
}

// pending is the number of notes not yet taken (for tests: it must be zero after every call).
func (c *requestCodec) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.failed)
}

// maxParseError bounds the decoder's reason in a refusal (protobuf's reasons name a field
// and never quote the input, but a refusal stays short whatever the decoder says).
const maxParseError = 256

// parseError is the refusal of a request that cannot be decoded as m's type.
// Why InvalidArgument: the bytes the client sent are not a valid message of the type the
// method takes; resending them cannot succeed, and the server is not at fault.
func parseError(m proto.Message, err error) error {
	return status.Error(codes.InvalidArgument, ParseFailure(m, err))
}

// ParseFailure is the text of the refusal of a request that cannot be decoded as m's type
// (any protocol's: the gateway's JSON transcoder says the same).
func ParseFailure(m proto.Message, err error) string {
	return fmt.Sprintf("cannot parse the request as %s: %s", proto.MessageName(m), input.Truncate(err.Error(), maxParseError))
}

func messageOf(v any) proto.Message {
	switch m := v.(type) {
	case protoadapt.MessageV2:
		return m
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(m)
	}
	return nil
}

// refuse is why a received message v must be refused: it could not be decoded, one of its
// lists or maps holds more entries than its bound (libs/platform/input/bounds), or the
// server's own check (Options.CheckRequest) refuses it.
func (c *requestCodec) refuse(v any) error {
	if err := c.take(v); err != nil {
		return err
	}
	m := messageOf(v)
	if m == nil {
		return nil
	}
	if err := bounds.Check(m.ProtoReflect()); err != nil {
		return err
	}
	if c.check != nil {
		return c.check(m)
	}
	return nil
}

// unary refuses a call whose request could not be decoded or is over a bound.
func (c *requestCodec) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := c.refuse(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// stream refuses every stream message that could not be decoded or is over a bound.
func (c *requestCodec) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &decodedStream{ServerStream: ss, codec: c})
}

type decodedStream struct {
	grpc.ServerStream
	codec *requestCodec
}

func (s *decodedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.codec.refuse(m)
}

var _ encoding.CodecV2 = (*requestCodec)(nil)
