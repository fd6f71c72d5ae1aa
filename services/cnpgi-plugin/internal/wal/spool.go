package wal

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// spool holds segments read ahead during recovery, one directory per store and server.
type spool struct {
	dir string
	ttl time.Duration

	mu      sync.Mutex
	entries map[string]*spoolEntry
	// endOfWAL holds the targets whose read-ahead found the end of the archive.
	endOfWAL map[string]bool
}

// spoolEntry is one read-ahead download: done closes when path holds the segment or err
// says why not.
type spoolEntry struct {
	path    string
	done    chan struct{}
	err     error
	created time.Time
}

func newSpool(dir string, ttl time.Duration) *spool {
	return &spool{dir: dir, ttl: ttl, entries: map[string]*spoolEntry{}, endOfWAL: map[string]bool{}}
}

// setEndOfWAL records that a read-ahead of t found no further segment.
func (sp *spool) setEndOfWAL(t Target) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.endOfWAL[t.id()] = true
}

// takeEndOfWAL reports and clears the end-of-archive flag of t: it answers one call, then
// the archive is asked again (new segments keep arriving while a standby streams).
func (sp *spool) takeEndOfWAL(t Target) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	set := sp.endOfWAL[t.id()]
	delete(sp.endOfWAL, t.id())
	return set
}

// emptyDir removes everything inside dir, creating dir when it is missing. The directory
// itself stays: its parent may not be writable by the plugin (a mounted volume's root).
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// claim registers a download of name for t; fresh is false when one exists already.
func (sp *spool) claim(t Target, name string) (e *spoolEntry, fresh bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.sweepLocked()
	k := shippedKey(t, name)
	if e, ok := sp.entries[k]; ok {
		return e, false
	}
	e = &spoolEntry{
		path:    filepath.Join(sp.dir, t.Store.Name, t.Server, name),
		done:    make(chan struct{}),
		created: time.Now(),
	}
	sp.entries[k] = e
	return e, true
}

// sweepLocked drops finished downloads nobody asked for within the TTL (a recovery that
// stopped, a target reached).
func (sp *spool) sweepLocked() {
	for k, e := range sp.entries {
		select {
		case <-e.done:
			if time.Since(e.created) > sp.ttl {
				_ = os.Remove(e.path)
				delete(sp.entries, k)
			}
		default:
		}
	}
}

// deliver moves a read-ahead segment to dest, waiting for its download if it is still
// running. It reports false when there is none or it failed: the caller then fetches the
// file itself, which also reports a missing file properly.
func (sp *spool) deliver(ctx context.Context, t Target, name, dest string) (bool, error) {
	k := shippedKey(t, name)
	sp.mu.Lock()
	e, ok := sp.entries[k]
	sp.mu.Unlock()
	if !ok {
		return false, nil
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	sp.mu.Lock()
	delete(sp.entries, k)
	sp.mu.Unlock()
	if e.err != nil {
		return false, nil
	}
	if err := moveFile(e.path, dest); err != nil {
		_ = os.Remove(e.path)
		return false, nil
	}
	return true, nil
}

// moveFile renames src to dest, or copies it through a temporary file when they are on
// different file systems (the spool is rarely inside PGDATA).
func moveFile(src, dest string) error {
	err := os.Rename(src, dest)
	if err == nil {
		return nil
	}
	f, openErr := os.Open(src)
	if openErr != nil {
		if errors.Is(openErr, fs.ErrNotExist) {
			return openErr
		}
		return errors.Join(err, openErr)
	}
	defer f.Close()
	if _, err := writeAtomically(dest, f, false); err != nil {
		return err
	}
	return os.Remove(src)
}
