package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/plinth-dev/plinth/services/vagrant-server/internal/registry"
)

// uniqueConstraints names, for each unique constraint of the schema, the request field it
// guards and what the value must be unique among.
var uniqueConstraints = map[string]struct{ field, among string }{
	"basis_name_key":                {"basis.name", "basis"},
	"basis_path_key":                {"basis.path", "basis"},
	"project_name_key":              {"project.name", "project of this basis"},
	"project_path_key":              {"project.path", "project of this basis"},
	"target_name_key":               {"target.name", "target of this project"},
	"target_uuid_key":               {"target.uuid", "target"},
	"box_directory_key":             {"box.directory", "box"},
	"box_name_version_provider_key": {"box.name", ""},
}

// parentConstraints maps foreign keys and checks to the request field they concern.
var parentConstraints = map[string]registry.PreconditionError{
	"project_basis_id_fkey":  {Field: "project.basis", Reason: "the basis no longer exists"},
	"target_project_id_fkey": {Field: "target.project", Reason: "the project no longer exists"},
	"target_parent_id_fkey":  {Field: "target.parent", Reason: "the parent target no longer exists"},
	"target_not_own_parent":  {Field: "target.parent", Reason: "a target cannot be its own parent"},
}

// writeError turns constraint violations into the registry's precondition errors naming the
// field (and the offending value, taken from m); anything else is wrapped for the log.
func writeError(err error, m proto.Message) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "23505": // unique_violation
		u, ok := uniqueConstraints[pgErr.ConstraintName]
		if !ok {
			break
		}
		if u.among == "" { // the box's (name, version, provider)
			return registry.Precondition(u.field, quoted("box %s version %s for provider %s already exists",
				field(m, "name"), field(m, "version"), field(m, "provider")))
		}
		_, name, _ := strings.Cut(u.field, ".")
		return registry.Conflict(u.field, field(m, name), u.among)
	case "23503", "23514": // foreign_key_violation, check_violation
		if p, ok := parentConstraints[pgErr.ConstraintName]; ok {
			return registry.Precondition(p.Field, p.Reason)
		}
	}
	return fmt.Errorf("write: %w", err)
}

// field returns the string field name of m ("" when m has none).
func field(m proto.Message, name string) string {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil || fd.Kind() != protoreflect.StringKind {
		return ""
	}
	return r.Get(fd).String()
}
