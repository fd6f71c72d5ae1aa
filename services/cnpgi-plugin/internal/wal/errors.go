package wal

import (
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

var (
	// ErrNotFound: the archive has no such WAL file (restore_command must then fail, so
	// that PostgreSQL ends recovery or switches to streaming).
	ErrNotFound = errors.New("WAL file not found in the archive")
	// ErrSourceMissing: the file to archive does not exist on the instance.
	ErrSourceMissing = errors.New("WAL file to archive does not exist")
	// ErrLocalFile: the plugin cannot read the file to archive or write the restored file
	// (permissions, a full disk): a problem on the instance, not in the archive. Errors
	// wrapping it are *LocalError, whose message says what is wrong.
	ErrLocalFile = errors.New("the plugin cannot read or write the local WAL file")
)

// ConflictError: the archive already holds different bytes under this name. The plugin
// never overwrites, because the archived file may be the only copy of another history.
type ConflictError struct {
	Server, Name string
	// Key is the archived object compared with (it may have another compression).
	Key string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("server %q already has a different %s in the archive (%s); refusing to overwrite it "+
		"(is another cluster archiving under the same serverName?)", e.Server, e.Name, e.Key)
}

// NotEmptyError: check_empty_wal_archive was requested and the archive already holds WAL
// this cluster did not write.
type NotEmptyError struct {
	Store, Server, Key string
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("the WAL archive of server %q in object store %q is not empty (found %s): "+
		"a new cluster must not archive over another cluster's WAL; choose another serverName or clean the archive",
		e.Server, e.Store, e.Key)
}

// UnreadableError: an object exists under the WAL file's name but in a form the plugin
// cannot read (an unknown compression suffix). Never reported as NotFound: PostgreSQL
// would take that for the end of the archive and stop recovery early without an error.
type UnreadableError struct {
	Server, Name, Key string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("server %q has %s archived as %s, in a compression this plugin cannot read; "+
		"restore it with the tool that wrote it", e.Server, e.Name, e.Key)
}

// LocalError is a problem with a path on the instance: Message says what is wrong in
// terms the operator can act on (a directory where a file belongs, a missing directory,
// permissions, a full disk, a name too long); Invalid marks paths the request got wrong
// (outside PGDATA, not a WAL file), as opposed to the instance's state. It wraps ErrLocalFile
// (or ErrSourceMissing) and the cause.
type LocalError struct {
	Field   string
	Message string
	Invalid bool
	Err     error
}

func (e *LocalError) Error() string {
	if e.Err != nil {
		return e.Field + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Field + ": " + e.Message
}

// Public is the message for the caller (the cause may hold paths of the plugin's own files).
func (e *LocalError) Public() string { return e.Field + ": " + e.Message }

// Unwrap returns the sentinel and the cause.
func (e *LocalError) Unwrap() []error {
	out := []error{ErrLocalFile}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func invalid(field, format string, args ...any) error { return input.Invalid(field, format, args...) }
