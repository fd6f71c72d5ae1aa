package identity

import (
	"errors"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// The identity rules' errors live here, all of them: internal/grpc/errors.go maps each to the
// status code that tells the client what to do next, in one place too.

// Sentinel errors of the rules and of Store implementations.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrBadLogin = errors.New("wrong username or password")
	ErrNoToken  = errors.New("no token given")
	// ErrBadToken: the token presented is not live (unknown, expired, revoked, disabled user).
	ErrBadToken = errors.New("invalid token")
	// ErrNotAdmin: the caller's token is valid, but the user is not an admin (a *RoleError
	// says which role and which method).
	ErrNotAdmin = errors.New("admin rights required")
	// ErrOwnAccount: an admin tried to disable their own account (and lock everyone out if
	// they are the last admin).
	ErrOwnAccount = errors.New("you cannot disable your own account")
	// ErrOwnRole: an admin tried to change their own role.
	ErrOwnRole = errors.New("you cannot change your own role")
	// ErrLastAdmin: the change would leave no enabled admin.
	ErrLastAdmin = errors.New("the last enabled admin cannot lose the admin role")
)

// RoleError: the caller's token is valid, but their role may not call the method. Its message
// is authz.Check's (role, method, kind), the same the gateway and the other services answer;
// it is ErrNotAdmin.
type RoleError struct{ Denied error }

func (e *RoleError) Error() string { return e.Denied.Error() }

// Is makes errors.Is(err, ErrNotAdmin) true.
func (e *RoleError) Is(target error) bool { return target == ErrNotAdmin }

// FieldError names the request field that is wrong and why; it maps to InvalidArgument. It is
// libs/platform/input's error, so the paging rule's errors and these are one kind.
type FieldError = input.Error

// IsFieldError reports whether err is a validation error and returns it.
func IsFieldError(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}

// LockedError is returned while a (username, address) pair or an address is throttled.
type LockedError struct {
	RetryAfter time.Duration
}

func (e *LockedError) Error() string {
	return "too many failed logins; retry after " + e.RetryAfter.Round(time.Second).String()
}

// BusyError is returned, before any hashing, when every argon2id slot and queue place is taken.
type BusyError struct {
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return "too many logins at once; retry after " + e.RetryAfter.Round(time.Second).String()
}
