package grpc

import (
	"context"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/tokens"
)

// Every string a client sends is checked before a handler sees it: valid UTF-8 (protobuf
// already insists), no NUL (Postgres text refuses it), and at most the length its kind of
// field allows — so a NUL or a megabyte name is InvalidArgument naming the field, never an
// Internal from the database. The limits (README, "Input limits"):
const (
	maxID    = 128     // resource ids, job and runner ids, uuids, key ids
	maxPath  = 4 << 10 // paths, directories, URLs
	maxShort = 64      // durations
)

// fieldLimits are the limits by field name; any other string field may hold input.MaxText,
// a map key input.MaxName.
var fieldLimits = map[protoreflect.Name]int{
	"resource_id": maxID, "id": maxID, "job_id": maxID, "runner_id": maxID, "uuid": maxID,
	"deployment_id": maxID, "instance_id": maxID, "key_id": maxID, "uid": maxID,
	"name": input.MaxName, "provider": input.MaxName, "version": input.MaxName, "user": input.MaxName,
	"command": input.MaxName, "action_name": input.MaxName, "target_action_name": input.MaxName,
	"path": maxPath, "directory": maxPath, "url": maxPath, "metadata_url": maxPath, "ref": maxPath,
	"cache_dir": maxPath, "config_dir": maxPath, "data_dir": maxPath, "temp_dir": maxPath,
	"duration": maxShort, "expires_in": maxShort,
	"token": tokens.MaxLen,
}

func limitOf(fd protoreflect.FieldDescriptor) int {
	if n, ok := fieldLimits[fd.Name()]; ok {
		return n
	}
	return input.MaxText
}

// checkRequest checks every string of m (nested messages, lists, map keys and values); the
// error names the field's path, e.g. `basis.name` or `job.labels["k"]`.
func checkRequest(m proto.Message) error {
	return checkMessage(m.ProtoReflect(), "")
}

func checkMessage(m protoreflect.Message, path string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		if path != "" {
			name = path + "." + name
		}
		err = checkValue(fd, v, name)
		return err == nil
	})
	return err
}

func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, name string) error {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if err := checkElem(fd, l.Get(i), name+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case fd.IsMap():
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			key := k.String()
			if err = input.String(name+" key", key, input.MaxName); err != nil {
				return false
			}
			err = checkElem(fd.MapValue(), mv, name+"["+input.Quote(key)+"]")
			return err == nil
		})
		return err
	default:
		return checkElem(fd, v, name)
	}
	return nil
}

// checkElem checks one value of field fd: a string, or a message to descend into.
func checkElem(fd protoreflect.FieldDescriptor, v protoreflect.Value, name string) error {
	switch {
	case fd.Kind() == protoreflect.StringKind:
		return input.String(name, v.String(), limitOf(fd))
	case fd.Message() != nil:
		return checkMessage(v.Message(), name)
	}
	return nil
}

// checkUnary checks a unary call's request before its handler runs.
func (s *Server) checkUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if err := checkRequest(m); err != nil {
			return nil, s.fail(ctx, err, "check the request")
		}
	}
	return h(ctx, req)
}

// checkStream checks every message a client sends on a stream as it is received.
func (s *Server) checkStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &checkedStream{ServerStream: ss, s: s})
}

type checkedStream struct {
	grpc.ServerStream
	s *Server
}

func (c *checkedStream) RecvMsg(m any) error {
	if err := c.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		if err := checkRequest(pm); err != nil {
			return c.s.fail(c.Context(), err, "check a stream message")
		}
	}
	return nil
}

// EdgeChecks are the server options that check every client message (checkRequest), for
// server.Options.GRPCOptions.
func (s *Server) EdgeChecks() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.checkUnary), grpc.ChainStreamInterceptor(s.checkStream)}
}
