package cluster

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by NotFoundError; test with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrExists is wrapped by ExistsError; test with errors.Is.
var ErrExists = errors.New("already exists")

// ErrConflict is wrapped by ConflictError: the request is valid but the cluster's state does
// not allow it now (it is being deleted, is not up yet, an upgrade is running).
var ErrConflict = errors.New("conflicts with the cluster's state")

// ErrUnmet is wrapped by UnmetError: the request is valid but the provider lacks what its
// machines need (a binary on the host) and nothing under way will bring it.
var ErrUnmet = errors.New("provider prerequisite missing")

// NotFoundError names what is missing.
type NotFoundError struct{ What string }

func (e *NotFoundError) Error() string { return e.What + " not found" }
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ExistsError names what already exists.
type ExistsError struct{ What string }

func (e *ExistsError) Error() string { return e.What + " already exists" }
func (e *ExistsError) Unwrap() error { return ErrExists }

// ConflictError says why the cluster's state refuses the request.
type ConflictError struct{ Reason string }

func (e *ConflictError) Error() string { return e.Reason }
func (e *ConflictError) Unwrap() error { return ErrConflict }

// UnmetError says what the provider lacks and how to get it.
type UnmetError struct{ Reason string }

func (e *UnmetError) Error() string { return e.Reason }
func (e *UnmetError) Unwrap() error { return ErrUnmet }

func clusterNotFound(name string) error { return &NotFoundError{What: fmt.Sprintf("cluster %q", name)} }

func conflict(format string, args ...any) error {
	return &ConflictError{Reason: fmt.Sprintf(format, args...)}
}
