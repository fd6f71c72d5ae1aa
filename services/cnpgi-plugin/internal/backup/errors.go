package backup

import "fmt"

// Kind says what a failed backup or recovery needs from the caller; the gRPC layer turns it
// into a status code.
type Kind int

const (
	// KindInvalid: a request field or parameter is wrong (Field names it).
	KindInvalid Kind = iota + 1
	// KindPrecondition: the instance, the store or the data directory is not in a state the
	// operation can work with; retrying without a change will not help.
	KindPrecondition
	// KindNotFound: no backup matches.
	KindNotFound
	// KindUnavailable: the instance or the store cannot be reached now; retry later.
	KindUnavailable
	// KindConfig: the plugin's own configuration is wrong.
	KindConfig
)

// Error is a backup, retention or recovery failure with a message fit for the user (no
// paths of other machines, no credentials); Err is the cause, for logs.
type Error struct {
	Kind  Kind
	Field string
	Msg   string
	Err   error
}

func (e *Error) Error() string {
	msg := e.Msg
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Public is the message to send to the caller: without the cause, which may hold details
// (SQL, endpoints) that belong in the logs only.
func (e *Error) Public() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

func invalid(field, format string, args ...any) error {
	return &Error{Kind: KindInvalid, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func precondition(err error, format string, args ...any) error {
	return &Error{Kind: KindPrecondition, Msg: fmt.Sprintf(format, args...), Err: err}
}
