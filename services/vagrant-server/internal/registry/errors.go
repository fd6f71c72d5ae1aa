package registry

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// ErrNotFound is matched (errors.Is) by every *NotFoundError.
var ErrNotFound = errors.New("not found")

// NotFoundError says which resource a lookup could not find. The gRPC layer answers NotFound.
type NotFoundError struct {
	Resource string // "basis", "project", "target" or "box"
	Key      string // what was looked for, e.g. `resource_id "01H…"` or `name "dev"`
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s with %s not found", e.Resource, e.Key) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFound builds a *NotFoundError.
func NotFound(resource, key string) error { return &NotFoundError{Resource: resource, Key: key} }

// Invalid is a malformed request: a required field is missing or a value cannot be parsed.
// The caller must fix the request: it is the platform's *input.Error (InvalidArgument), whose
// message starts with the field's path, e.g. "basis.name".
func Invalid(field, reason string) error { return &input.Error{Field: field, Reason: reason} }

// PreconditionError is a well-formed request the registry's current state does not allow:
// a name or path another resource already uses, a parent that does not exist, a move to
// another parent. Retrying the same request fails the same way until the state changes;
// the gRPC layer answers FailedPrecondition (as upstream does for its validation failures).
type PreconditionError struct {
	Field  string
	Reason string
}

func (e *PreconditionError) Error() string { return e.Field + ": " + e.Reason }

// Conflict builds the *PreconditionError for a uniqueness violation on field.
func Conflict(field, value, resource string) error {
	return &PreconditionError{Field: field, Reason: fmt.Sprintf("%s is already used by another %s", input.Quote(value), resource)}
}

// Precondition builds a *PreconditionError.
func Precondition(field, reason string) error {
	return &PreconditionError{Field: field, Reason: reason}
}
