package front

import (
	"errors"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

// requestJSON is vanguard's JSON codec, except that a body it cannot decode is the client's
// error: InvalidArgument naming the message type, as the backends answer a protobuf body they
// cannot decode (vanguard reports any other codec error as Unknown, and the gateway logged
// the call at ERROR). The transcoder decodes JSON only from clients: backends answer in
// protobuf, which it re-encodes.
type requestJSON struct{ *vanguard.JSONCodec }

func newRequestJSON(res vanguard.TypeResolver) vanguard.Codec {
	return requestJSON{vanguard.NewJSONCodec(res)}
}

// Unmarshal decodes a client's JSON message.
func (c requestJSON) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.JSONCodec.Unmarshal(data, msg); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, errors.New(server.ParseFailure(msg, err)))
	}
	return nil
}
