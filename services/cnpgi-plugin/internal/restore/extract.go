package restore

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// extractor unpacks tar archives into one directory, refusing entries that would land
// outside it: absolute names, "..", or paths through a symlink the archive made.
type extractor struct {
	root     string
	symlinks map[string]bool
	buf      []byte
	// files and bytes count what was written.
	files, bytes int64
}

func newExtractor(root string) *extractor {
	return &extractor{root: root, symlinks: map[string]bool{}, buf: make([]byte, 1<<20)}
}

// extract unpacks one tar stream.
func (x *extractor) extract(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		rel, err := x.clean(h.Name)
		if err != nil {
			return err
		}
		if rel == "" { // the root itself ("./")
			continue
		}
		full := filepath.Join(x.root, filepath.FromSlash(rel))
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(full, 0o700); err != nil {
				return err
			}
			if err := os.Chmod(full, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := x.file(full, tr, mode); err != nil {
				return fmt.Errorf("write %s: %w", rel, err)
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, full); err != nil {
				return err
			}
			x.symlinks[rel] = true
		default:
			return fmt.Errorf("archive entry %s has unsupported type %q", h.Name, h.Typeflag)
		}
	}
}

// clean checks an entry name and returns it relative to the root, "/"-separated.
func (x *extractor) clean(name string) (string, error) {
	if path.IsAbs(name) {
		return "", fmt.Errorf("archive entry %q is absolute", name)
	}
	rel := path.Clean(name)
	if rel == "." {
		return "", nil
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("archive entry %q leaves the directory", name)
	}
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if x.symlinks[dir] {
			return "", fmt.Errorf("archive entry %q goes through the symlink %s", name, dir)
		}
	}
	return rel, nil
}

func (x *extractor) file(full string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode|0o600)
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(f, r, x.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	x.files, x.bytes = x.files+1, x.bytes+n
	return err
}

// emptyDir makes sure dir exists and holds nothing (creating it 0700 when absent): a
// restore never mixes into an existing data directory. It reports whether it created dir.
func emptyDir(dir, what string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, fmt.Errorf("create %s: %w", what, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	for _, e := range entries {
		if e.Name() != "lost+found" { // the root of a fresh volume
			return false, fmt.Errorf("%s %s is not empty (found %s): a restore needs an empty directory", what, dir, e.Name())
		}
	}
	return false, os.Chmod(dir, 0o700)
}

// clearDir removes what a failed restore wrote, so that the next attempt starts clean.
func clearDir(dir string, created bool) {
	if created {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "lost+found" {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
