package grpc

import (
	"strconv"

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

// CheckRequest checks every string of m (nested messages, lists, map keys and values); the
// error names the field's path, e.g. `basis.name` or `job.labels["k"]`. Every client message
// passes it before the auth hook and the handler (server.Options.CheckRequest).
func CheckRequest(m proto.Message) error {
	return input.Walk(m.ProtoReflect(), func(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) error {
		switch {
		case fd.IsList():
			if fd.Kind() != protoreflect.StringKind {
				return nil
			}
			l := v.List()
			for i := range l.Len() {
				if err := input.String(path+"["+strconv.Itoa(i)+"]", l.Get(i).String(), limitOf(fd)); err != nil {
					return err
				}
			}
		case fd.IsMap():
			var err error
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				if err = input.String(path+" key", key, input.MaxName); err == nil && fd.MapValue().Kind() == protoreflect.StringKind {
					err = input.String(path+"["+input.Quote(key)+"]", mv.String(), limitOf(fd.MapValue()))
				}
				return err == nil
			})
			return err
		case fd.Kind() == protoreflect.StringKind:
			return input.String(path, v.String(), limitOf(fd))
		}
		return nil
	})
}
