package wal

import (
	"errors"
	"fmt"
)

// InvalidError is a request the caller must fix; Field names the request field.
type InvalidError struct {
	Field, Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

var (
	// ErrNotFound: the archive has no such WAL file (restore_command must then fail, so
	// that PostgreSQL ends recovery or switches to streaming).
	ErrNotFound = errors.New("WAL file not found in the archive")
	// ErrSourceMissing: the file to archive does not exist on the instance.
	ErrSourceMissing = errors.New("WAL file to archive does not exist")
	// ErrLocalFile: the plugin cannot read the file to archive or write the restored file
	// (permissions, a full disk): a problem on the instance, not in the archive.
	ErrLocalFile = errors.New("the plugin cannot read or write the local WAL file")
)

// ConflictError: the archive already holds different bytes under this name. The plugin
// never overwrites, because the archived file may be the only copy of another history.
type ConflictError struct {
	Server, Name string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("server %q already has a different %s in the archive; refusing to overwrite it "+
		"(is another cluster archiving under the same serverName?)", e.Server, e.Name)
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
