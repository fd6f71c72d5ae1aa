package wal

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
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
	// Destination is %p: where to write it, absolute or relative to PGData.
	Destination string
	// DataDirs are the data directories the destination may lie in (or in the volumes
	// their pg_wal links to): the instance's PGDATA first, against which relative paths
	// resolve.
	DataDirs []string
	Mode     RestoreMode
	// StreamingAvailable says PostgreSQL can stream from a primary when the archive runs
	// out (a standby): then a read-ahead that finds the end of the archive makes the next
	// call that the spool cannot serve answer NotFound at once, as CloudNativePG's
	// end-of-wal-stream flag does, so that the standby switches to streaming without
	// another round trip to the store.
	StreamingAvailable bool
}

// readAheadTimeout bounds one read-ahead download.
const readAheadTimeout = 5 * time.Minute

// Restore writes the archived file to req.Destination atomically (a temporary file in the
// same directory, renamed), or fails with ErrNotFound. In recovery mode it keeps the
// MaxParallel-1 following segments downloading into the spool, in parallel, so that the
// next calls are answered from local disk.
func (s *Service) Restore(ctx context.Context, t Target, req RestoreRequest) error {
	if err := input.String("source_wal_name", req.Name, MaxNameLen); err != nil {
		return err
	}
	fn, err := ParseFileName(req.Name)
	if err != nil {
		return invalid("source_wal_name", "%v", err)
	}
	dd, err := newDataDirs(req.DataDirs)
	if err != nil {
		return err
	}
	dest, err := dd.destination("destination_file_name", req.Destination)
	if err != nil {
		return err
	}
	var size int64
	delivered := false
	if req.Mode == RestoreRecovery {
		if delivered, err = s.spool.deliver(ctx, t, fn.Name, dest); err != nil {
			return err
		}
	}
	if delivered {
		if fi, err := os.Stat(dest); err == nil {
			size = fi.Size()
		}
	} else {
		if req.Mode == RestoreRecovery && req.StreamingAvailable && s.spool.takeEndOfWAL(t) {
			s.log.InfoContext(ctx, "end of the WAL archive reached while reading ahead; PostgreSQL can stream from the primary",
				"wal", fn.Name, "server", t.Server)
			return ErrNotFound
		}
		loc, err := s.locate(ctx, t, fn)
		if err != nil {
			return err
		}
		if loc.Partial {
			s.log.InfoContext(ctx, "restoring a .partial WAL file in place of the segment", "wal", fn.Name, "key", loc.Key, "server", t.Server)
		}
		// No fsync: PostgreSQL makes a restored file durable itself (durable_rename) when it
		// keeps it, and reads it straight away otherwise.
		if size, err = fetch(ctx, t.Store, loc, dest, false); err != nil {
			return err
		}
	}
	// A sliding window: segments already read ahead or in flight are skipped, so each call
	// adds the one segment that just came into the window.
	if req.Mode == RestoreRecovery && fn.Kind == KindSegment {
		s.readAhead(t, fn, size, t.Store.WAL.MaxParallel-1, req.StreamingAvailable)
	}
	return nil
}

// readAhead starts background downloads of the n segments after fn; segSize is the size of
// fn, i.e. the cluster's wal_segment_size.
func (s *Service) readAhead(t Target, fn FileName, segSize int64, n int, streaming bool) {
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
			if errors.Is(e.err, ErrNotFound) && streaming {
				s.spool.setEndOfWAL(t)
			}
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
func fetch(ctx context.Context, st *stores.Named, loc located, dest string, sync bool) (n int64, err error) {
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
// renames it to dest. Local failures are *LocalError saying what went wrong.
func writeAtomically(dest string, r io.Reader, sync bool) (n int64, err error) {
	const field = "destination_file_name"
	shown := input.Quote(dest)
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".plinth-tmp-*")
	if err != nil {
		return 0, localErr(field, shown, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	var w countingFile
	w.f = tmp
	// Large writes: a 16 MiB segment in 16 system calls rather than 512.
	if _, err = io.CopyBuffer(&w, r, make([]byte, 1<<20)); err != nil {
		if w.err != nil { // the local write failed, not the download
			return 0, localErr(field, shown, w.err)
		}
		return 0, err
	}
	n = w.n
	if sync {
		if err = tmp.Sync(); err != nil {
			return 0, localErr(field, shown, err)
		}
	}
	if err = tmp.Close(); err != nil {
		return 0, localErr(field, shown, err)
	}
	if err = os.Rename(tmp.Name(), dest); err != nil {
		return 0, localErr(field, shown, err)
	}
	return n, nil
}

// countingFile writes to f, remembering a write error so that it is told apart from a
// failing download.
type countingFile struct {
	f   *os.File
	n   int64
	err error
}

func (c *countingFile) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}
