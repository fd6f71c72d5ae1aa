package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync/atomic"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// copyBuffer is the read and write size of the data path.
const copyBuffer = 1 << 20

// upload streams a source through compression and (with a key) encryption into the
// target's data object and returns the manifest describing it; nothing is staged on disk.
// done counts the volume bytes read so far.
func (r *Runner) upload(ctx context.Context, st objectstore.Store, t Target, src *source, done *atomic.Uint64) (*Manifest, error) {
	m := &Manifest{
		Format: Format, SizeBytes: uint64(src.size), Source: src.kind, ExtentSize: src.extentSize, Extents: src.extents,
		Data: dataKeyBase + r.compression.Ext(), Compression: string(r.compression), Encrypted: t.Key != nil,
	}
	volumeSum, dataSum := sha256.New(), sha256.New()
	n, err := objectstore.PutFunc(ctx, st, m.Data, objectstore.PutOptions{Size: -1}, func(w io.Writer) error {
		stored := io.MultiWriter(w, dataSum)
		var sink io.Writer = stored
		var enc io.WriteCloser
		if t.Key != nil {
			var err error
			if enc, err = encryption.NewWriter(stored, t.Key); err != nil {
				return err
			}
			sink = enc
		}
		cw, err := compression.Writer(r.compression, sink, r.threads)
		if err != nil {
			return err
		}
		in := &countingReader{r: io.NewSectionReader(src, 0, src.size), n: done, ctx: ctx}
		if _, err := io.CopyBuffer(io.MultiWriter(cw, volumeSum), in, make([]byte, copyBuffer)); err != nil {
			return fmt.Errorf("read volume: %w", err)
		}
		if err := cw.Close(); err != nil {
			return err
		}
		if enc != nil {
			return enc.Close()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.DataBytes, m.DataSHA256 = n, hex.EncodeToString(dataSum.Sum(nil))
	if t.Key != nil {
		m.KeyID = t.Key.ID()
		if m.SealedVolumeSHA256, err = seal(volumeSum.Sum(nil), t.Key); err != nil {
			return nil, err
		}
	} else {
		m.VolumeSHA256 = hex.EncodeToString(volumeSum.Sum(nil))
	}
	m.CreatedAt = time.Now().UTC()
	return m, nil
}

// putManifest stores the manifest, never over another: the path is the backup's.
func putManifest(ctx context.Context, st objectstore.Store, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return st.Put(ctx, manifestKey, bytes.NewReader(data), objectstore.PutOptions{IfAbsent: true, Size: int64(len(data))})
}

// readManifest fetches and parses a backup's manifest (ErrNoBackup when there is none).
func readManifest(ctx context.Context, st objectstore.Store) (*Manifest, error) {
	rc, _, err := st.Get(ctx, manifestKey)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, ErrNoBackup
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxManifest+1))
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	return m, nil
}

// checkKey tells up front whether the request's key opens the backup.
func checkKey(m *Manifest, key *encryption.Key) error {
	switch {
	case !m.Encrypted:
		return nil
	case key == nil:
		return ErrKeyRequired
	case key.ID() != m.KeyID:
		return &KeyMismatchError{Backup: m.KeyID, Given: key.ID()}
	}
	return nil
}

// download writes a backup into dst and verifies it: the stored object's checksum, the
// encryption's authentication, the compressor's own check, the volume bytes' checksum and
// their count. done counts the volume bytes written so far.
func (r *Runner) download(ctx context.Context, st objectstore.Store, m *Manifest, key *encryption.Key, dst destination, done *atomic.Uint64) error {
	want, err := m.volumeChecksum(key)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	kind, _ := compressionOf(m.Compression)
	rc, _, err := st.Get(ctx, m.Data)
	if errors.Is(err, objectstore.ErrNotFound) {
		return fmt.Errorf("%w: the data object is missing", ErrNoBackup)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	// The object store's and the volume's own failures are told apart from bytes that do
	// not decrypt or decompress: those mean the backup is damaged.
	stored := &recordingReader{r: rc}
	out := &recordingWriter{w: io.NewOffsetWriter(dst, 0)}
	dataSum, volumeSum := sha256.New(), sha256.New()
	teed := io.TeeReader(stored, dataSum)
	plain := teed
	if m.Encrypted {
		dec, hdr, err := encryption.NewReader(plain, key)
		if err != nil {
			return damaged(err, stored, out)
		}
		if !hdr.Encrypted {
			return fmt.Errorf("%w: the manifest says encrypted, the data is not", ErrChecksum)
		}
		plain = dec
	}
	dr, err := compression.Reader(kind, plain, r.threads)
	if err != nil {
		return damaged(err, stored, out)
	}
	defer dr.Close()
	// One byte more than the volume may hold, to notice a backup that does not fit.
	in := &countingReader{r: io.LimitReader(io.TeeReader(dr, volumeSum), int64(m.SizeBytes)+1), n: done, ctx: ctx}
	written, err := io.CopyBuffer(out, in, make([]byte, copyBuffer))
	if err != nil {
		return damaged(err, stored, out)
	}
	// Drain what follows (the encryption's last chunk, a compressor's trailer) so that every
	// check runs and the stored object is hashed whole.
	if _, err := io.Copy(io.Discard, plain); err != nil {
		return damaged(err, stored, out)
	}
	if _, err := io.Copy(io.Discard, teed); err != nil {
		return damaged(err, stored, out)
	}
	switch {
	case uint64(written) != m.SizeBytes:
		return fmt.Errorf("%w: %d bytes restored, the backup holds %d", ErrChecksum, written, m.SizeBytes)
	case sum(dataSum) != m.DataSHA256:
		return fmt.Errorf("%w: the stored object changed since the backup", ErrChecksum)
	case sum(volumeSum) != want:
		return ErrChecksum
	}
	return dst.Sync()
}

func sum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// damaged classifies a failed restore copy: the object store's or the volume's own error,
// the context's, or else the backup's bytes that would not decrypt or decompress.
func damaged(err error, stored *recordingReader, out *recordingWriter) error {
	switch {
	case out.err != nil:
		return fmt.Errorf("write volume: %w", out.err)
	case stored.err != nil && !errors.Is(stored.err, io.EOF):
		return fmt.Errorf("read backup: %w", stored.err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %v", ErrChecksum, err)
}

// recordingReader remembers its source's last error.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// recordingWriter remembers its destination's last error.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// countingReader counts bytes into n and stops when ctx ends.
type countingReader struct {
	r   io.Reader
	n   *atomic.Uint64
	ctx context.Context
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n.Add(uint64(n))
	return n, err
}
