// Package atomicfile writes files that a reader never sees half-written.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WritePrivate replaces path with data, readable and writable by its owner only (0600): the
// bytes go to a temporary file in the same directory, which is renamed over path, so a reader
// finds the old content or the new, never a part, and never a wider mode. Secrets (passwords,
// keys) are written this way.
func WritePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
