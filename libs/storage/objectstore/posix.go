package objectstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// tmpMarker is part of every temporary file name; List never shows such files, so a Put
// interrupted by a crash leaves debris but never a half-written object.
const tmpMarker = ".plinth-tmp-"

// POSIX is a store in a local (or NFS-mounted) directory, like pgBackRest's posix
// repositories: every object is a file under Root, written to a temporary file, fsynced and
// then linked or renamed into place.
type POSIX struct {
	root   string
	noSync bool
}

var _ Store = (*POSIX)(nil)

// NewPOSIX opens (creating it when missing) the directory root. noSync skips fsync: only for
// tests and throw-away data, since a crash may then lose objects Put reported as stored.
func NewPOSIX(root string, noSync bool) (*POSIX, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("posix store path %q must be absolute", root)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("posix store: create %s: %w", root, osErr(err))
	}
	return &POSIX{root: filepath.Clean(root), noSync: noSync}, nil
}

// Root is the directory holding the objects.
func (p *POSIX) Root() string { return p.root }

func (p *POSIX) path(key string) string { return filepath.Join(p.root, filepath.FromSlash(key)) }

// Put writes a temporary file beside the target, fsyncs it, and moves it into place: with
// IfAbsent by link(2), which fails atomically when the target exists; otherwise by rename(2).
func (p *POSIX) Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (err error) {
	if err := ValidateKey(key); err != nil {
		return err
	}
	final := p.path(key)
	dir := filepath.Dir(final)
	if err := p.mkdirAll(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(final)+tmpMarker+"*")
	if err != nil {
		return fmt.Errorf("posix store: create temporary file: %w", osErr(err))
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, contextReader{ctx, r}); err != nil {
		return fmt.Errorf("posix store: write %s: %w", key, osErr(err))
	}
	if !p.noSync {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("posix store: fsync %s: %w", key, osErr(err))
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("posix store: close %s: %w", key, osErr(err))
	}
	if err := p.place(tmp.Name(), final, opts.IfAbsent); err != nil {
		return err
	}
	return p.syncDir(dir)
}

// place moves the finished temporary file to final.
func (p *POSIX) place(tmp, final string, ifAbsent bool) error {
	if !ifAbsent {
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("posix store: rename into place: %w", osErr(err))
		}
		return nil
	}
	err := os.Link(tmp, final)
	if err == nil || errors.Is(err, fs.ErrExist) {
		_ = os.Remove(tmp)
		if err != nil {
			return ErrExists
		}
		return nil
	}
	// Some filesystems (FUSE, a few NFS servers) have no hard links: fall back to a check
	// and a rename, which is only racy against a concurrent writer of the same key.
	if _, statErr := os.Lstat(final); statErr == nil {
		_ = os.Remove(tmp)
		return ErrExists
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("posix store: rename into place: %w", osErr(err))
	}
	return nil
}

// Get opens the object's file.
func (p *POSIX) Get(_ context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return nil, ObjectInfo{}, err
	}
	f, err := os.Open(p.path(key))
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("posix store: open %s: %w", key, osErr(err))
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		if err == nil {
			return nil, ObjectInfo{}, fmt.Errorf("posix store: %s: %w", key, ErrNotFound)
		}
		return nil, ObjectInfo{}, fmt.Errorf("posix store: stat %s: %w", key, osErr(err))
	}
	return f, ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// GetRange opens the object's file at offset, limited to length bytes (length < 0: to the end).
func (p *POSIX) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, ObjectInfo, error) {
	if offset < 0 {
		return nil, ObjectInfo{}, fmt.Errorf("posix store: get %s: negative offset %d", key, offset)
	}
	r, info, err := p.Get(ctx, key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	f := r.(*os.File)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, ObjectInfo{}, fmt.Errorf("posix store: seek %s: %w", key, osErr(err))
	}
	if length < 0 {
		return f, info, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, length), f}, info, nil
}

// Stat describes the object's file.
func (p *POSIX) Stat(_ context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(p.path(key))
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("posix store: stat %s: %w", key, osErr(err))
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("posix store: %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete removes the object's file.
func (p *POSIX) Delete(_ context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := os.Remove(p.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("posix store: delete %s: %w", key, osErr(err))
	}
	return p.syncDir(filepath.Dir(p.path(key)))
}

// List walks the directories under prefix lazily, each sorted so that keys come out in the
// same byte order an S3 listing uses ("a.b" before "a/b").
func (p *POSIX) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		start := ""
		if i := strings.LastIndex(prefix, "/"); i >= 0 {
			start = prefix[:i]
		}
		_ = p.walk(ctx, start, prefix, yield)
	}
}

// walk lists dir (relative key path) and recurses; it returns false once yield asked to stop.
func (p *POSIX) walk(ctx context.Context, dir, prefix string, yield func(ObjectInfo, error) bool) bool {
	if err := ctx.Err(); err != nil {
		return yield(ObjectInfo{}, err)
	}
	entries, err := os.ReadDir(p.path(dir))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return true
	}
	if err != nil {
		return yield(ObjectInfo{}, fmt.Errorf("posix store: list %s: %w", dir, osErr(err)))
	}
	sortKey := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(sortKey(a), sortKey(b)) })
	for _, e := range entries {
		key := e.Name()
		if dir != "" {
			key = dir + "/" + key
		}
		switch {
		case e.IsDir():
			if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
				if !p.walk(ctx, key, prefix, yield) {
					return false
				}
			}
		case e.Type().IsRegular() && strings.HasPrefix(key, prefix) && !strings.Contains(e.Name(), tmpMarker):
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while listing
			}
			if err != nil {
				return yield(ObjectInfo{}, fmt.Errorf("posix store: stat %s: %w", key, osErr(err)))
			}
			if !yield(ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil) {
				return false
			}
		}
	}
	return true
}

// mkdirAll creates dir and its missing parents, fsyncing each parent that gained an entry
// so a crash cannot lose the directory of an object Put reported as stored.
func (p *POSIX) mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := p.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("posix store: create directory: %w", osErr(err))
	}
	return p.syncDir(filepath.Dir(dir))
}

func (p *POSIX) syncDir(dir string) error {
	if p.noSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("posix store: open directory for fsync: %w", osErr(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) { // EINVAL: fs without directory fsync
		return fmt.Errorf("posix store: fsync directory: %w", osErr(err))
	}
	return nil
}

// osErr adds the store's sentinel to file-system errors callers branch on.
func osErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.Join(err, ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return errors.Join(err, ErrDenied)
	}
	return err
}

// contextReader stops a copy when ctx ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}
