package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// ArchiveRequest is one archive_command call.
type ArchiveRequest struct {
	// SourcePath is the absolute path of the file in pg_wal.
	SourcePath string
	// CheckEmpty is the request's check_empty_wal_archive; nil when the caller (an operator
	// built before cnpg-i v0.6.0) did not send the field.
	CheckEmpty *bool
	// SkipEmptyCheck is the cluster's cnpg.io/skipEmptyWalArchiveCheck annotation, which
	// older operators left to the plugin.
	SkipEmptyCheck bool
}

// CheckEmptyMarker is the file CloudNativePG creates in PGDATA after initdb. Operators that
// do not send check_empty_wal_archive expect the archiver to check the archive while the
// file exists and to remove it after the first archived WAL file.
const CheckEmptyMarker = ".check-empty-wal-archive"

// bufferLimit: files up to this size are compressed in memory and sent with one request;
// larger ones (wal_segment_size up to 1 GiB) are streamed.
const bufferLimit = 64 << 20

// Archive stores the file at req.SourcePath, plus up to MaxParallel-1 other files that
// PostgreSQL has marked .ready, so that their own calls return at once. Archiving the same
// bytes again succeeds; different bytes under an archived name fail with ConflictError.
func (s *Service) Archive(ctx context.Context, t Target, req ArchiveRequest) error {
	if !filepath.IsAbs(req.SourcePath) {
		return invalid("source_file_name", "%q must be an absolute path", req.SourcePath)
	}
	fn, err := ParseFileName(filepath.Base(req.SourcePath))
	if err != nil {
		return invalid("source_file_name", "%v", err)
	}
	comp, err := writableCompression(t.Store.WAL.Compression)
	if err != nil {
		return err
	}
	if s.ready.take(t, fn.Name) {
		s.log.DebugContext(ctx, "WAL file was archived ahead in parallel", "wal", fn.Name, "server", t.Server)
		return nil
	}
	check, marker := s.emptyCheckWanted(req)
	if check {
		if err := s.checkEmpty(ctx, t, req.SourcePath); err != nil {
			return err
		}
	}
	extras := s.ready.siblings(t, req.SourcePath, fn.Name, t.Store.WAL.MaxParallel-1)
	errs := make([]error, 1+len(extras))
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = s.archiveFile(ctx, t, req.SourcePath, fn, comp) })
	for i, x := range extras {
		wg.Go(func() { errs[i+1] = s.archiveFile(ctx, t, x.path, x.name, comp) })
	}
	wg.Wait()
	for i, x := range extras {
		if errs[i+1] != nil {
			s.log.WarnContext(ctx, "archiving a ready WAL file ahead failed; PostgreSQL will ask for it again",
				"wal", x.name.Name, "server", t.Server, "error", errs[i+1])
			continue
		}
		s.ready.add(t, x.name.Name)
	}
	if errs[0] != nil {
		return errs[0]
	}
	if marker != "" {
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.WarnContext(ctx, "could not remove the empty-archive check marker", "error", err)
		}
	}
	return nil
}

// emptyCheckWanted decides check_empty_wal_archive: the request's explicit value, or, from
// older operators, the marker file in PGDATA (returned so it is removed after success).
func (s *Service) emptyCheckWanted(req ArchiveRequest) (bool, string) {
	if req.CheckEmpty != nil {
		return *req.CheckEmpty, ""
	}
	dir := filepath.Dir(req.SourcePath)
	if req.SkipEmptyCheck || filepath.Base(dir) != "pg_wal" {
		return false, ""
	}
	marker := filepath.Join(filepath.Dir(dir), CheckEmptyMarker)
	if _, err := os.Stat(marker); err != nil {
		return false, ""
	}
	return true, marker
}

// archiveFile archives one file unless it already is.
func (s *Service) archiveFile(ctx context.Context, t Target, path string, fn FileName, comp Compression) error {
	rec, ok, err := s.catalog.File(ctx, t.Store.Name, t.Server, fn.Name)
	if err != nil {
		return err
	}
	if ok {
		local, err := hashFile(path)
		if err != nil {
			return err
		}
		if local.sum != rec.SHA256 {
			return &ConflictError{Server: t.Server, Name: fn.Name}
		}
		return nil
	}
	// Not in the catalog: the store may still hold it (written by barman, or by us before
	// the catalog row was lost), possibly with another compression.
	if loc, err := s.findObject(ctx, t, fn); err != nil {
		return err
	} else if loc != nil {
		return s.adopt(ctx, t, path, fn, *loc)
	}
	f, err := s.upload(ctx, t, path, fn, comp)
	if errors.Is(err, objectstore.ErrExists) { // another writer won the race: compare with it
		loc, findErr := s.findObject(ctx, t, fn)
		if findErr != nil || loc == nil {
			return errors.Join(err, findErr)
		}
		return s.adopt(ctx, t, path, fn, *loc)
	}
	if err != nil {
		return err
	}
	return s.record(ctx, f)
}

// record adds f to the catalog; a record with other bytes means a concurrent conflicting
// archive.
func (s *Service) record(ctx context.Context, f ArchivedFile) error {
	stored, _, err := s.catalog.Record(ctx, f)
	if err != nil {
		return err
	}
	if stored.SHA256 != f.SHA256 {
		return &ConflictError{Server: f.Server, Name: f.Name}
	}
	return nil
}

// adopt compares the local file with an object found in the store and records it when
// they hold the same bytes.
func (s *Service) adopt(ctx context.Context, t Target, path string, fn FileName, loc located) error {
	local, err := hashFile(path)
	if err != nil {
		return err
	}
	remote, err := hashObject(ctx, t.Store, loc)
	if err != nil {
		return err
	}
	if local.sum != remote {
		return &ConflictError{Server: t.Server, Name: fn.Name}
	}
	return s.record(ctx, local.archived(t, fn, loc.Key, loc.Compression, loc.Size))
}

// upload compresses the file and stores it under its key, refusing to replace an object.
func (s *Service) upload(ctx context.Context, t Target, path string, fn FileName, comp Compression) (ArchivedFile, error) {
	src, err := os.Open(path)
	if err != nil {
		return ArchivedFile{}, sourceErr(err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return ArchivedFile{}, sourceErr(err)
	}
	key := baseKey(t.Server, fn) + comp.Ext()
	var d digest
	in := io.TeeReader(src, &d)
	var stored int64
	if fi.Size() <= bufferLimit {
		var buf bytes.Buffer
		buf.Grow(int(fi.Size()/2) + 4096)
		if err := compressTo(&buf, t.Store, comp, in); err != nil {
			return ArchivedFile{}, err
		}
		stored = int64(buf.Len())
		err = t.Store.Store.Put(ctx, key, bytes.NewReader(buf.Bytes()), objectstore.PutOptions{IfAbsent: true, Size: stored})
	} else {
		stored, err = putStreaming(ctx, t.Store, key, comp, in)
	}
	if err != nil {
		return ArchivedFile{}, err
	}
	return d.finish().archived(t, fn, key, comp, stored), nil
}

// putStreaming compresses (and encrypts) in through a pipe into a multipart upload.
func putStreaming(ctx context.Context, st *objectstore.Named, key string, comp Compression, in io.Reader) (int64, error) {
	pr, pw := io.Pipe()
	var written countWriter
	done := make(chan error, 1)
	go func() {
		err := compressTo(io.MultiWriter(pw, &written), st, comp, in)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	err := st.Store.Put(ctx, key, pr, objectstore.PutOptions{IfAbsent: true, Size: -1})
	_ = pr.CloseWithError(errUploadEnded) // unblocks the compressor if Put gave up early
	if cerr := <-done; cerr != nil && !errors.Is(cerr, errUploadEnded) {
		err = errors.Join(err, cerr)
	}
	return written.n, err
}

// errUploadEnded is what the compressor sees when the upload stopped reading.
var errUploadEnded = errors.New("upload ended")

// compressTo compresses r into w, encrypting after compression when the store has a key
// (ciphertext does not compress).
func compressTo(w io.Writer, st *objectstore.Named, comp Compression, r io.Reader) error {
	sw, err := st.Seal(w)
	if err != nil {
		return err
	}
	cw, err := compressor(comp, sw)
	if err != nil {
		return err
	}
	if _, err := io.Copy(cw, r); err != nil {
		_ = cw.Close()
		return sourceErr(err)
	}
	if err := cw.Close(); err != nil {
		return err
	}
	return sw.Close()
}

// openObject streams an archived file's plaintext: decrypted when the object is encrypted,
// then decompressed. The caller closes it.
func openObject(ctx context.Context, st *objectstore.Named, key string, comp Compression) (io.ReadCloser, error) {
	r, _, err := st.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	plain, err := st.Unseal(r, key)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	d, err := decompressor(comp, plain)
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("decompress %s: %w", key, err)
	}
	return readCloser{d, func() error { return errors.Join(d.Close(), r.Close()) }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
