package backup

import (
	"context"
	"errors"
	"io"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// upload streams a tar archive that fill writes, through compression (then encryption when
// the store has a key), straight into the store (a multipart upload on S3): nothing is
// staged on local disk, so a backup needs no free space beside PGDATA. It returns the tar's
// size and the stored size.
func upload(ctx context.Context, st *stores.Named, key string, c Compression, fill func(*tarWriter) error) (raw, stored int64, err error) {
	var rawN counter
	stored, err = objectstore.PutFunc(ctx, st.Store, key, objectstore.PutOptions{IfAbsent: true, Size: -1}, func(w io.Writer) error {
		sw, err := st.Seal(w)
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
	})
	if err != nil {
		return 0, 0, err
	}
	return rawN.n, stored, nil
}

// OpenArchive streams an archive's tar, decrypted when the object is encrypted, then
// decompressed; the caller closes it. Reading to the end authenticates every chunk.
func OpenArchive(ctx context.Context, st *stores.Named, a Archive) (io.ReadCloser, error) {
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
