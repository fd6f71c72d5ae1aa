package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

// instance is one PostgreSQL data directory whose WAL the plugin archives and restores.
// CloudNativePG passes paths inside it (pg_wal/…, RECOVERYXLOG), absolute or relative to
// it, and nothing a client sends may make the plugin read or write elsewhere. pg_wal may be
// a symbolic link to a separate WAL volume (CloudNativePG's walStorage): its target counts
// as inside.
type instance struct {
	pgdata string   // as configured
	roots  []string // PGDATA and pg_wal with symbolic links resolved
}

// dataDirs confines the paths of one request to the configured data directories: the
// instance's PGDATA first (relative paths are relative to it), then any others a plugin
// serving several PostgreSQL servers on one host is given.
type dataDirs struct {
	base string // the instance's PGDATA as configured: relative paths resolve against it
	dirs []*instance
}

// newDataDirs resolves the data directories. A missing PGDATA is the instance's state, not
// the request's fault.
func newDataDirs(dirs []string) (dataDirs, error) {
	if len(dirs) == 0 || dirs[0] == "" {
		return dataDirs{}, &LocalError{Field: "pgdata", Message: "the plugin has no PGDATA configured (PLINTH_CNPGI_PGDATA): it archives and restores only inside it"}
	}
	out := dataDirs{base: filepath.Clean(dirs[0])}
	var firstErr error
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return dataDirs{}, &LocalError{Field: "pgdata", Message: "the configured PGDATA " + input.Quote(d) + " is not absolute (PLINTH_CNPGI_PGDATA)"}
		}
		in := &instance{pgdata: filepath.Clean(d)}
		root, err := filepath.EvalSymlinks(in.pgdata)
		if err != nil {
			// A data directory that does not exist yet (a recovery job's, before its
			// restore) holds nothing to archive: the others still serve.
			if firstErr == nil {
				firstErr = localErr("pgdata", "PGDATA "+in.pgdata, err)
			}
			continue
		}
		in.roots = append(in.roots, root)
		if wal, err := filepath.EvalSymlinks(filepath.Join(root, "pg_wal")); err == nil && !in.within(wal) {
			in.roots = append(in.roots, wal)
		}
		out.dirs = append(out.dirs, in)
	}
	if len(out.dirs) == 0 {
		return dataDirs{}, firstErr
	}
	return out, nil
}

func (in *instance) within(p string) bool {
	for _, r := range in.roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// owner is the data directory that holds p (links resolved), or nil.
func (dd dataDirs) owner(p string) *instance {
	for _, in := range dd.dirs {
		if in.within(p) {
			return in
		}
	}
	return nil
}

// outside is the refusal of a path outside every data directory.
func (dd dataDirs) outside(field, shown, what string) error {
	return &LocalError{Field: field, Invalid: true, Message: shown + what + " (" + dd.base + "): refused"}
}

// abs makes a request path absolute (relative paths are relative to PGDATA), after bounding it.
func (dd dataDirs) abs(field, p string) (string, error) {
	if err := input.String(field, p, MaxPathLen); err != nil {
		return "", err
	}
	if p == "" {
		return "", invalid(field, "is empty")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dd.base, p)
	}
	return filepath.Clean(p), nil
}

// source resolves the file to archive: it must exist, be a regular file and lie inside a
// data directory once symbolic links are resolved (a segment-named link to /etc/passwd is
// refused). It returns the resolved path and the data directory holding it.
func (dd dataDirs) source(field, p string) (string, os.FileInfo, *instance, error) {
	p, err := dd.abs(field, p)
	if err != nil {
		return "", nil, nil, err
	}
	shown := input.Quote(p)
	lfi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil, &LocalError{Field: field, Message: shown + " does not exist", Err: ErrSourceMissing}
	}
	if err != nil {
		return "", nil, nil, localErr(field, shown, err)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, nil, &LocalError{Field: field, Message: shown + " is a symbolic link to a file that does not exist", Err: ErrSourceMissing}
		}
		return "", nil, nil, localErr(field, shown, err)
	}
	in := dd.owner(resolved)
	if in == nil {
		what := " is outside PGDATA"
		if lfi.Mode()&fs.ModeSymlink != 0 {
			what = " is a symbolic link to a file outside PGDATA"
		}
		return "", nil, nil, dd.outside(field, shown, what)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", nil, nil, localErr(field, shown, err)
	}
	if fi.IsDir() {
		return "", nil, nil, &LocalError{Field: field, Invalid: true, Message: shown + " is a directory, not a WAL file"}
	}
	if !fi.Mode().IsRegular() {
		return "", nil, nil, &LocalError{Field: field, Invalid: true, Message: shown + " is not a regular file"}
	}
	return resolved, fi, in, nil
}

// tmpOverhead is what writeAtomically adds to a destination's name for its temporary file.
const tmpOverhead = len(".") + len(".plinth-tmp-") + 10

// destination resolves where a restored file goes: its directory must exist and lie inside
// PGDATA, and the name must leave room for the temporary file beside it.
func (dd dataDirs) destination(field, p string) (string, error) {
	p, err := dd.abs(field, p)
	if err != nil {
		return "", err
	}
	shown := input.Quote(p)
	base := filepath.Base(p)
	if len(base)+tmpOverhead > 255 {
		return "", &LocalError{Field: field, Invalid: true,
			Message: fmt.Sprintf("%s: the file name is %d bytes long; file systems allow 255, and the plugin needs %d for its temporary file", shown, len(base), tmpOverhead)}
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return "", &LocalError{Field: field, Message: shown + ": its directory does not exist"}
	}
	if err != nil {
		return "", localErr(field, shown, err)
	}
	if dd.owner(dir) == nil {
		return "", dd.outside(field, shown, " is outside PGDATA")
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", localErr(field, shown, err)
	} else if !fi.IsDir() {
		return "", &LocalError{Field: field, Message: shown + ": its parent is not a directory"}
	}
	dest := filepath.Join(dir, base)
	if fi, err := os.Lstat(dest); err == nil && fi.IsDir() {
		return "", &LocalError{Field: field, Invalid: true, Message: shown + " is a directory; give the file to write"}
	}
	return dest, nil
}

// systemID reads the instance's system identifier from global/pg_control (its first field);
// 0 when it cannot be read.
func (in *instance) systemID() uint64 {
	f, err := os.Open(filepath.Join(in.roots[0], "global", "pg_control"))
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [8]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}

// localErr says what a file-system error means for whoever fixes the instance.
func localErr(field, shown string, err error) error {
	msg := "cannot read or write it"
	for _, r := range localReasons {
		if errors.Is(err, r.err) {
			msg = r.msg
			break
		}
	}
	return &LocalError{Field: field, Message: shown + ": " + msg, Err: err}
}

// localReasons say what a file-system error means, in the order they are checked.
var localReasons = []struct {
	err error
	msg string
}{
	{fs.ErrPermission, "permission denied: run the plugin as the PostgreSQL user (CloudNativePG's sidecar does)"},
	{syscall.ENOSPC, "no space left on the device"},
	{syscall.EDQUOT, "over the disk quota"},
	{syscall.EROFS, "the file system is read-only"},
	{syscall.ENAMETOOLONG, "the file name is too long for the file system"},
	{syscall.ENOTDIR, "a part of the path is not a directory"},
	{syscall.ELOOP, "too many levels of symbolic links"},
	{syscall.EIO, "I/O error on the device"},
	{fs.ErrNotExist, "does not exist"},
}
