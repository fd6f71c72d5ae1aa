package wal

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"time"
)

// sourceErr marks errors reading the file to archive so the caller learns they are not the
// store's fault, and what is wrong.
func sourceErr(err error) error {
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &LocalError{Field: "source_file_name", Message: "the file vanished while it was archived", Err: errors.Join(ErrSourceMissing, err)}
	case errors.As(err, &pathErr):
		return localErr("source_file_name", input.Quote(pathErr.Path), err)
	}
	return err
}

// digest hashes a file while it is read and keeps its first bytes for the page header.
type digest struct {
	h    hash.Hash
	head []byte
	size int64
}

func (d *digest) Write(b []byte) (int, error) {
	if d.h == nil {
		d.h = sha256.New()
	}
	if need := longHeaderSize - len(d.head); need > 0 {
		d.head = append(d.head, b[:min(need, len(b))]...)
	}
	d.size += int64(len(b))
	return d.h.Write(b)
}

// localFile is what hashing a local file learnt.
type localFile struct {
	sum    [32]byte
	size   int64
	header segmentHeader
	hasHdr bool
}

func (d *digest) finish() localFile {
	if d.h == nil {
		d.h = sha256.New()
	}
	var l localFile
	copy(l.sum[:], d.h.Sum(nil))
	l.size = d.size
	l.header, l.hasHdr = parseHeader(d.head)
	return l
}

// archived is the catalog record of src stored under key. Segments carry the system
// identifier of their page header; history and backup files, which have none, the archiving
// instance's (from pg_control), so that check_empty_wal_archive knows them as its own.
func (l localFile) archived(t Target, src source, key string, comp Compression, stored int64) ArchivedFile {
	fn := src.name
	f := ArchivedFile{
		Store: t.Store.Name, Server: t.Server, Name: fn.Name, Kind: fn.Kind, Timeline: fn.Timeline,
		Size: l.size, StoredSize: stored, Compression: comp, SHA256: l.sum, Key: key, ArchivedAt: time.Now(),
		SystemID: src.sysID,
	}
	if l.hasHdr && (fn.Kind == KindSegment || fn.Kind == KindPartial) {
		f.SystemID = l.header.SystemID
	}
	return f
}

func hashFile(path string) (localFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return localFile{}, sourceErr(err)
	}
	defer f.Close()
	var d digest
	if _, err := io.Copy(&d, f); err != nil {
		return localFile{}, sourceErr(err)
	}
	return d.finish(), nil
}
