package backup

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// What a base backup leaves out of PGDATA: what pg_basebackup leaves out (basebackup.c's
// excludeDirContents and excludeFiles), plus server logs and signal files as barman-cloud
// does. Excluded directories are kept, empty, so the restored PGDATA has them.
var (
	excludeDirContents = []string{
		"pg_wal", "pg_xlog", "pg_dynshmem", "pg_notify", "pg_replslot", "pg_serial",
		"pg_snapshots", "pg_stat_tmp", "pg_subtrans", "log", "pg_log",
	}
	// excludeRootFiles only matter at the top of PGDATA.
	excludeRootFiles = []string{
		"postmaster.pid", "postmaster.opts", "backup_label", "tablespace_map", "backup_manifest",
		"standby.signal", "recovery.signal", "recovery.conf", "postgresql.auto.conf.tmp", "current_logfiles.tmp",
	}
)

// pgControl is copied last: it must not be older than any data file in the backup.
const pgControl = "global/pg_control"

// excludedFile reports files left out wherever they are (temporary files, relation caches).
func excludedFile(name string) bool {
	return strings.HasPrefix(name, "pgsql_tmp") || strings.HasPrefix(name, "pg_internal.init")
}

// tarWriter writes a directory tree into a tar stream, tolerating files that change while it
// reads them: PostgreSQL keeps writing during an online backup, and WAL replay repairs any
// torn page, exactly as with pg_basebackup.
type tarWriter struct {
	tw  *tar.Writer
	buf []byte
	// files counts the regular files written.
	files int64
}

func newTarWriter(w io.Writer) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), buf: make([]byte, 1<<20)}
}

// walkOptions say what one tree walk leaves out.
type walkOptions struct {
	// skip returns true for paths (relative, "/"-separated) to leave out entirely.
	skip func(rel string) bool
	// emptyDirs are directories (relative) written without their contents.
	emptyDirs []string
	// asDir are symlinks (relative) written as empty directories (pg_wal on its own volume).
	asDir []string
}

// addTree writes the tree under root, relative names, directories before their contents.
func (w *tarWriter) addTree(root string, o walkOptions) error {
	return w.addDir(root, "", o)
}

func (w *tarWriter) addDir(root, rel string, o walkOptions) error {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) && rel != "" { // dropped during the backup
		return nil
	}
	if err != nil {
		return fmt.Errorf("read directory %s: %w", rel, err)
	}
	unlogged := unloggedRelations(entries)
	for _, e := range entries {
		name := e.Name()
		child := path.Join(rel, name)
		if o.skip != nil && o.skip(child) || excludedFile(name) || unlogged(name) {
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(child))
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0 && slices.Contains(o.asDir, child):
			if err := w.dirHeader(child+"/", fi, 0o700|fs.ModeDir); err != nil {
				return err
			}
			if child == "pg_wal" {
				if err := w.dirHeader("pg_wal/archive_status/", fi, 0o700|fs.ModeDir); err != nil {
					return err
				}
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if err := w.symlink(child, full, fi); err != nil {
				return err
			}
		case fi.IsDir():
			if err := w.dirHeader(child+"/", fi, fi.Mode()); err != nil {
				return err
			}
			if slices.Contains(o.emptyDirs, child) {
				if child == "pg_wal" {
					if err := w.dirHeader("pg_wal/archive_status/", fi, fi.Mode()); err != nil {
						return err
					}
				}
				continue
			}
			if err := w.addDir(root, child, o); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := w.addFile(child, full); err != nil {
				return err
			}
		}
		// Sockets, pipes and devices have no place in a backup.
	}
	return nil
}

// unloggedRelations returns a filter for the data files of unlogged relations in a
// database directory: only their init fork is backed up (recovery resets them from it).
func unloggedRelations(entries []os.DirEntry) func(name string) bool {
	var inits []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), "_init"); ok && isDigits(n) {
			inits = append(inits, n)
		}
	}
	if len(inits) == 0 {
		return func(string) bool { return false }
	}
	return func(name string) bool {
		base := name
		if i := strings.IndexAny(base, "._"); i > 0 {
			base = base[:i]
		}
		return isDigits(base) && slices.Contains(inits, base) && !strings.HasSuffix(name, "_init")
	}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// dirHeader writes the header of directory rel.
func (w *tarWriter) dirHeader(rel string, fi fs.FileInfo, mode fs.FileMode) error {
	h := &tar.Header{Name: rel, Mode: int64(mode.Perm()), ModTime: fi.ModTime(), Typeflag: tar.TypeDir, Format: tar.FormatPAX}
	owner(h, fi)
	return w.tw.WriteHeader(h)
}

func (w *tarWriter) symlink(rel, full string, fi fs.FileInfo) error {
	target, err := os.Readlink(full)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: rel, Linkname: target, Mode: 0o777, ModTime: fi.ModTime(), Typeflag: tar.TypeSymlink, Format: tar.FormatPAX}
	owner(h, fi)
	return w.tw.WriteHeader(h)
}

// addFile writes a regular file with the size it had when opened: bytes appended later are
// left out and a file that shrank is padded with zeros, as pg_basebackup and barman do.
func (w *tarWriter) addFile(rel, full string) error {
	f, err := os.Open(full)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	h := &tar.Header{Name: rel, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	owner(h, fi)
	if err := w.tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.CopyBuffer(w.tw, io.LimitReader(f, fi.Size()), w.buf)
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if n < fi.Size() {
		if _, err := io.CopyBuffer(w.tw, io.LimitReader(zeros{}, fi.Size()-n), w.buf); err != nil {
			return err
		}
	}
	w.files++
	return nil
}

// addBytes writes a file made of data (backup_label, tablespace_map).
func (w *tarWriter) addBytes(rel string, data []byte, like fs.FileInfo) error {
	h := &tar.Header{Name: rel, Mode: 0o600, Size: int64(len(data)), ModTime: like.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	owner(h, like)
	if err := w.tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := w.tw.Write(data)
	w.files++
	return err
}

// Close writes the tar trailer (not closing the underlying writer).
func (w *tarWriter) Close() error { return w.tw.Close() }

func owner(h *tar.Header, fi fs.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		h.Uid, h.Gid = int(st.Uid), int(st.Gid)
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}
