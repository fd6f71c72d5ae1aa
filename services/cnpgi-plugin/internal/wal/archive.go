package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// ArchiveRequest is one archive_command call.
type ArchiveRequest struct {
	// SourcePath is the file in pg_wal: absolute, or relative to PGData.
	SourcePath string
	// DataDirs are the data directories the source may lie in (or in the volumes their
	// pg_wal links to): the instance's PGDATA first, against which relative paths resolve.
	DataDirs []string
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

// defaultBufferLimit: files up to this size are compressed in memory and sent with one
// request; larger ones (wal_segment_size up to 1 GiB) are streamed.
const defaultBufferLimit = 64 << 20

// maxTextFile bounds history and backup history files (text of a few lines per timeline).
const maxTextFile = 16 << 20

// source is a validated local file to archive.
type source struct {
	path  string // with symbolic links resolved
	name  FileName
	size  int64
	sysID uint64 // the archiving instance's system identifier (0: unknown)
	// dataDir is the data directory holding the file.
	dataDir *instance
}

// Archive stores the file at req.SourcePath, plus up to MaxParallel-1 other files that
// PostgreSQL has marked .ready, so that their own calls return at once. Archiving the same
// bytes again succeeds; different bytes under an archived name fail with ConflictError.
func (s *Service) Archive(ctx context.Context, t Target, req ArchiveRequest) error {
	if err := input.String("source_file_name", req.SourcePath, MaxPathLen); err != nil {
		return err
	}
	fn, err := ParseFileName(filepath.Base(req.SourcePath))
	if err != nil {
		return invalid("source_file_name", "%v", err)
	}
	comp, err := writableCompression(t.Store.WAL.Compression)
	if err != nil {
		return err
	}
	dd, err := newDataDirs(req.DataDirs)
	if err != nil {
		return err
	}
	if s.ready.take(t, fn.Name) {
		s.log.DebugContext(ctx, "WAL file was archived ahead in parallel", "wal", fn.Name, "server", t.Server)
		return nil
	}
	src, err := dd.validated("source_file_name", req.SourcePath, fn)
	if err != nil {
		return err
	}
	check, marker := s.emptyCheckWanted(req, src.dataDir)
	if check {
		if err := s.checkEmpty(ctx, t, src); err != nil {
			return err
		}
	}
	extras := s.ready.siblings(t, dd, filepath.Dir(src.path), fn.Name, t.Store.WAL.MaxParallel-1)
	errs := make([]error, 1+len(extras))
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = s.archiveFile(ctx, t, src, comp) })
	for i, x := range extras {
		wg.Go(func() { errs[i+1] = s.archiveFile(ctx, t, x, comp) })
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

// validated resolves and checks a file to archive: inside PGDATA, a regular file, and for
// segments a real WAL segment (size and first page header), so that whatever a client names
// never reaches the archive unless PostgreSQL could have written it.
func (dd dataDirs) validated(field, path string, fn FileName) (source, error) {
	resolved, fi, in, err := dd.source(field, path)
	if err != nil {
		return source{}, err
	}
	src := source{path: resolved, name: fn, size: fi.Size(), sysID: in.systemID(), dataDir: in}
	shown := input.Quote(path)
	switch fn.Kind {
	case KindSegment, KindPartial:
		head := make([]byte, longHeaderSize)
		f, err := os.Open(resolved)
		if err != nil {
			return source{}, localErr(field, shown, err)
		}
		n, err := io.ReadFull(f, head)
		_ = f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return source{}, localErr(field, shown, err)
		}
		if problem := segmentProblem(fn, src.size, head[:n]); problem != "" {
			return source{}, &LocalError{Field: field, Invalid: true, Message: shown + " is not a WAL segment: " + problem}
		}
		if h, ok := parseHeader(head); ok {
			src.sysID = h.SystemID
		}
	default:
		if src.size > maxTextFile {
			return source{}, &LocalError{Field: field, Invalid: true,
				Message: fmt.Sprintf("%s is %d bytes: too large for a %s file", shown, src.size, fn.Kind)}
		}
	}
	return src, nil
}

// emptyCheckWanted decides check_empty_wal_archive: the request's explicit value, or, from
// older operators, the marker file in PGDATA (returned so it is removed after success).
func (s *Service) emptyCheckWanted(req ArchiveRequest, in *instance) (bool, string) {
	if req.CheckEmpty != nil {
		return *req.CheckEmpty, ""
	}
	if req.SkipEmptyCheck {
		return false, ""
	}
	marker := filepath.Join(in.roots[0], CheckEmptyMarker)
	if _, err := os.Stat(marker); err != nil {
		return false, ""
	}
	return true, marker
}

// checkEmpty implements check_empty_wal_archive: the server's archive must hold nothing but
// files of this same PostgreSQL system (same system identifier: a segment's page header, or
// for history and backup files the archiving instance's pg_control, which only the catalog
// or this process's waiting records know). Each object is judged by the catalog's record
// when there is one, else — barman's WAL, a lost catalog, a catalog that does not answer —
// a segment by the header read from the store. A passed check is remembered, so the calls
// that follow the first archive stay cheap.
func (s *Service) checkEmpty(ctx context.Context, t Target, src source) error {
	sysID := src.sysID
	memo := t.id() + "\x00" + strconv.FormatUint(sysID, 10)
	if _, ok := s.checked.Load(memo); ok && sysID != 0 {
		return nil
	}
	prefix := walsPrefix(t.Server)
	for info, err := range t.Store.Store.List(ctx, prefix) {
		if err != nil {
			return err
		}
		ours, err := s.sameSystem(ctx, t, info.Key, sysID)
		if err != nil {
			return err
		}
		if !ours {
			return &NotEmptyError{Store: t.Store.Name, Server: t.Server, Key: info.Key}
		}
	}
	if sysID != 0 {
		s.checked.Store(memo, true)
	}
	return nil
}

// sameSystem reports whether the archived object at key belongs to PostgreSQL system sysID.
func (s *Service) sameSystem(ctx context.Context, t Target, key string, sysID uint64) (bool, error) {
	if sysID == 0 {
		return false, nil
	}
	if rec, ok := s.catalog.lookup(ctx, t.Store.Name, t.Server, stripCompression(path.Base(key))); ok {
		return rec.SystemID == sysID, nil
	}
	fn, comp, ok := ParseObjectKey(t.Server, key)
	if !ok || (fn.Kind != KindSegment && fn.Kind != KindPartial) {
		return false, nil
	}
	r, err := openObject(ctx, t.Store, key, comp)
	if errors.Is(err, stores.ErrDecrypt) {
		return false, nil // written with another key: another cluster's
	}
	if err != nil {
		return false, err
	}
	defer r.Close()
	head := make([]byte, longHeaderSize)
	if _, err := io.ReadFull(r, head); err != nil {
		return false, nil // not a segment this plugin could have written
	}
	h, ok := parseHeader(head)
	return ok && h.SystemID == sysID, nil
}

// archiveFile archives one file unless it already is.
func (s *Service) archiveFile(ctx context.Context, t Target, src source, comp Compression) error {
	if rec, ok := s.catalog.lookup(ctx, t.Store.Name, t.Server, src.name.Name); ok {
		local, err := hashFile(src.path)
		if err != nil {
			return err
		}
		if local.sum != rec.SHA256 {
			return &ConflictError{Server: t.Server, Name: src.name.Name, Key: rec.Key}
		}
		return nil
	}
	// Not in the catalog (or the catalog did not answer): the store may still hold it
	// (written by barman, by us before the catalog row was lost or while it was down),
	// possibly with another compression.
	var (
		f   ArchivedFile
		err error
	)
	if src.size <= s.bufferLimit {
		f, err = s.uploadInMemory(ctx, t, src, comp)
	} else {
		f, err = s.uploadStreaming(ctx, t, src, comp)
	}
	var found *foundError
	switch {
	case errors.As(err, &found):
		return s.adopt(ctx, t, src, found.local, found.loc)
	case errors.Is(err, objectstore.ErrExists): // another writer won the race: compare with it
		loc, findErr := findObject(ctx, t, src.name, false)
		if findErr != nil || loc == nil {
			return errors.Join(err, findErr)
		}
		local, herr := hashFile(src.path)
		if herr != nil {
			return herr
		}
		return s.adopt(ctx, t, src, local, *loc)
	case err != nil:
		return err
	}
	return s.record(ctx, f)
}

// foundError: the store already holds the file (the upload did not happen); local is what
// hashing the file learnt, loc the object to compare with.
type foundError struct {
	local localFile
	loc   located
}

func (e *foundError) Error() string { return "already in the store as " + e.loc.Key }

// uploadInMemory archives a file that fits in memory in one request. Three things run at
// once: the store is asked whether it holds the name already, the file is hashed, and it is
// compressed (on every core for gzip) and encrypted; then one PutObject sends it. So the
// archive call costs little more than the compression and the upload themselves.
func (s *Service) uploadInMemory(ctx context.Context, t Target, src source, comp Compression) (ArchivedFile, error) {
	data, err := os.ReadFile(src.path)
	if err != nil {
		return ArchivedFile{}, sourceErr(err)
	}
	var (
		wg              sync.WaitGroup
		loc             *located
		findErr, encErr error
		local           localFile
		stored          []byte
	)
	wg.Go(func() { loc, findErr = findObject(ctx, t, src.name, false) })
	wg.Go(func() {
		var d digest
		_, _ = d.Write(data)
		local = d.finish()
	})
	wg.Go(func() { stored, encErr = encode(t.Store, comp, data) })
	wg.Wait()
	switch {
	case findErr != nil:
		return ArchivedFile{}, findErr
	case loc != nil:
		return ArchivedFile{}, &foundError{local: local, loc: *loc}
	case encErr != nil:
		return ArchivedFile{}, encErr
	}
	key := baseKey(t.Server, src.name) + comp.Ext()
	err = t.Store.Store.Put(ctx, key, bytes.NewReader(stored), objectstore.PutOptions{IfAbsent: true, Size: int64(len(stored))})
	if err != nil {
		return ArchivedFile{}, err
	}
	return local.archived(t, src, key, comp, int64(len(stored))), nil
}

// encode compresses data with every core (see compression.Compress), then encrypts it when
// the store has a key.
func encode(st *stores.Named, comp Compression, data []byte) ([]byte, error) {
	out, err := compression.Compress(comp, data, runtime.GOMAXPROCS(0))
	if err != nil || st.Encryption == nil {
		return out, err
	}
	var buf bytes.Buffer
	buf.Grow(int(encryption.EncryptedSize(int64(len(out)))))
	sw, err := st.Seal(&buf)
	if err != nil {
		return nil, err
	}
	if _, err := sw.Write(out); err != nil {
		return nil, err
	}
	if err := sw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// record adds f to the catalog (now, or once it answers again); a record with other bytes
// means a concurrent conflicting archive.
func (s *Service) record(ctx context.Context, f ArchivedFile) error {
	if stored := s.catalog.record(ctx, f); stored.SHA256 != f.SHA256 {
		return &ConflictError{Server: f.Server, Name: f.Name, Key: stored.Key}
	}
	return nil
}

// adopt compares the local file with an object found in the store and records it when
// they hold the same bytes.
func (s *Service) adopt(ctx context.Context, t Target, src source, local localFile, loc located) error {
	remote, err := hashObject(ctx, t.Store, loc)
	if err != nil {
		return err
	}
	if local.sum != remote {
		return &ConflictError{Server: t.Server, Name: src.name.Name, Key: loc.Key}
	}
	return s.record(ctx, local.archived(t, src, loc.Key, loc.Compression, loc.Size))
}

// uploadStreaming archives a file too large to hold in memory (wal_segment_size up to
// 1 GiB): after the store says it does not hold the name, the file is compressed through a
// pipe into a multipart upload, hashed as it is read.
func (s *Service) uploadStreaming(ctx context.Context, t Target, src source, comp Compression) (ArchivedFile, error) {
	loc, err := findObject(ctx, t, src.name, false)
	if err != nil {
		return ArchivedFile{}, err
	}
	if loc != nil {
		local, err := hashFile(src.path)
		if err != nil {
			return ArchivedFile{}, err
		}
		return ArchivedFile{}, &foundError{local: local, loc: *loc}
	}
	f, err := os.Open(src.path)
	if err != nil {
		return ArchivedFile{}, sourceErr(err)
	}
	defer f.Close()
	key := baseKey(t.Server, src.name) + comp.Ext()
	var d digest
	stored, err := putStreaming(ctx, t.Store, key, comp, io.TeeReader(f, &d))
	if err != nil {
		return ArchivedFile{}, err
	}
	return d.finish().archived(t, src, key, comp, stored), nil
}

// putStreaming compresses (and encrypts) in through a pipe into a multipart upload.
func putStreaming(ctx context.Context, st *stores.Named, key string, comp Compression, in io.Reader) (int64, error) {
	return objectstore.PutFunc(ctx, st.Store, key, objectstore.PutOptions{IfAbsent: true, Size: -1}, func(w io.Writer) error {
		return compressTo(w, st, comp, in)
	})
}

// compressTo compresses r into w, encrypting after compression when the store has a key
// (ciphertext does not compress).
func compressTo(w io.Writer, st *stores.Named, comp Compression, r io.Reader) error {
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
func openObject(ctx context.Context, st *stores.Named, key string, comp Compression) (io.ReadCloser, error) {
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
