package backup

import (
	"context"
	"errors"
	"io"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// errUploadEnded is what the tar writer sees when the upload stopped reading.
var errUploadEnded = errors.New("upload ended")

// upload streams a tar archive that fill writes, through compression (then encryption when
// the store has a key), straight into the store (a multipart upload on S3): nothing is
// staged on local disk, so a backup needs no free space beside PGDATA. It returns the tar's
// size and the stored size.
func upload(ctx context.Context, st *objectstore.Named, key string, c Compression, fill func(*tarWriter) error) (raw, stored int64, err error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := st.Store.Put(ctx, key, pr, objectstore.PutOptions{IfAbsent: true, Size: -1})
		_ = pr.CloseWithError(errUploadEnded) // a Put that gave up early unblocks the writer
		done <- err
	}()
	var storedN, rawN counter
	werr := func() error {
		sw, err := st.Seal(io.MultiWriter(pw, &storedN))
		if err != nil {
			return err
		}
		cw, err := compressor(c, sw)
		if err != nil {
			return err
		}
		tw := newTarWriter(io.MultiWriter(cw, &rawN))
		if err := fill(tw); err != nil {
			return err
		}
		if err := tw.Close(); err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
		return sw.Close()
	}()
	_ = pw.CloseWithError(werr) // nil: the upload sees the end of the archive
	putErr := <-done
	switch {
	case putErr != nil && werr != nil && !errors.Is(werr, errUploadEnded):
		return 0, 0, errors.Join(werr, putErr)
	case putErr != nil:
		return 0, 0, putErr
	case werr != nil:
		return 0, 0, werr
	}
	return rawN.n, storedN.n, nil
}

// OpenArchive streams an archive's tar, decrypted when the object is encrypted, then
// decompressed; the caller closes it. Reading to the end authenticates every chunk.
func OpenArchive(ctx context.Context, st *objectstore.Named, a Archive) (io.ReadCloser, error) {
	r, _, err := st.Store.Get(ctx, a.Key)
	if err != nil {
		return nil, err
	}
	plain, err := st.Unseal(r, a.Key)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	d, err := decompressor(a.Compression, plain)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{d, closers{d, r}}, nil
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
