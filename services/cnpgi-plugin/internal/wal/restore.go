package wal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// RestoreMode is why PostgreSQL asks for a WAL file.
type RestoreMode int

const (
	// RestoreRecovery: archive recovery or a standby replaying from the archive; the next
	// segments are read ahead.
	RestoreRecovery RestoreMode = iota
	// RestoreRewind: pg_rewind fetching single files; nothing is read ahead.
	RestoreRewind
)

// RestoreRequest is one restore_command call.
type RestoreRequest struct {
	// Name is %f: the WAL file PostgreSQL wants.
	Name string
	// Destination is the absolute path to write it to (%p made absolute).
	Destination string
	Mode        RestoreMode
}

// readAheadTimeout bounds one read-ahead download.
const readAheadTimeout = 5 * time.Minute

// Restore writes the archived file to req.Destination atomically (a temporary file in the
// same directory, renamed), or fails with ErrNotFound. In recovery mode it keeps the
// MaxParallel-1 following segments downloading into the spool, in parallel, so that the
// next calls are answered from local disk.
func (s *Service) Restore(ctx context.Context, t Target, req RestoreRequest) error {
	fn, err := ParseFileName(req.Name)
	if err != nil {
		return invalid("source_wal_name", "%v", err)
	}
	if !filepath.IsAbs(req.Destination) {
		return invalid("destination_file_name", "%q must be an absolute path", req.Destination)
	}
	var size int64
	delivered := false
	if req.Mode == RestoreRecovery {
		if delivered, err = s.spool.deliver(ctx, t, fn.Name, req.Destination); err != nil {
			return err
		}
	}
	if delivered {
		if fi, err := os.Stat(req.Destination); err == nil {
			size = fi.Size()
		}
	} else {
		loc, err := s.locate(ctx, t, fn)
		if err != nil {
			return err
		}
		if size, err = fetch(ctx, t.Store, loc, req.Destination, true); err != nil {
			return err
		}
	}
	// A sliding window: segments already read ahead or in flight are skipped, so each call
	// adds the one segment that just came into the window.
	if req.Mode == RestoreRecovery && fn.Kind == KindSegment {
		s.readAhead(t, fn, size, t.Store.WAL.MaxParallel-1)
	}
	return nil
}

// readAhead starts background downloads of the n segments after fn; segSize is the size of
// fn, i.e. the cluster's wal_segment_size.
func (s *Service) readAhead(t Target, fn FileName, segSize int64, n int) {
	next := fn
	for range n {
		next = next.Next(segSize)
		want := next // the goroutine must not see later iterations
		e, fresh := s.spool.claim(t, want.Name)
		if !fresh {
			continue
		}
		started := s.goTask(func() {
			ctx, cancel := context.WithTimeout(s.bg, readAheadTimeout)
			defer cancel()
			e.err = s.download(ctx, t, want, e.path)
			if e.err != nil && !errors.Is(e.err, ErrNotFound) {
				s.log.Warn("reading a WAL segment ahead failed; it will be fetched when asked for",
					"wal", want.Name, "server", t.Server, "error", e.err)
			}
			close(e.done)
		})
		if !started {
			e.err = errors.New("plugin shutting down")
			close(e.done)
			return
		}
	}
}

func (s *Service) download(ctx context.Context, t Target, fn FileName, dest string) error {
	loc, err := s.locate(ctx, t, fn)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	_, err = fetch(ctx, t.Store, loc, dest, false)
	return err
}

// fetch decrypts and decompresses the object into dest through a temporary file in dest's
// directory, so that dest never exists half-written (nor holds unauthenticated bytes). It
// returns the plaintext size.
func fetch(ctx context.Context, st *objectstore.Named, loc located, dest string, sync bool) (n int64, err error) {
	d, err := openObject(ctx, st, loc.Key, loc.Compression)
	if isNotFound(err) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return writeAtomically(dest, d, sync)
}

// writeAtomically copies r to a temporary file beside dest, optionally fsyncs it, and
// renames it to dest.
func writeAtomically(dest string, r io.Reader, sync bool) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".plinth-tmp-*")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrLocalFile, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if n, err = io.Copy(tmp, r); err != nil {
		return 0, err
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrLocalFile, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrLocalFile, err)
	}
	if err = os.Rename(tmp.Name(), dest); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrLocalFile, err)
	}
	return n, nil
}
