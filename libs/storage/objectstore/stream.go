package objectstore

import (
	"context"
	"errors"
	"io"
)

// errUploadEnded is what the writer sees when the upload stopped reading early.
var errUploadEnded = errors.New("upload ended")

// PutFunc stores what write writes under key without staging it anywhere: write runs in the
// caller's goroutine and feeds st.Put through a pipe (a multipart upload on S3, a temporary
// file linked into place on POSIX), so compression and encryption inside write overlap
// with the upload. opts.Size is usually -1. It returns the number of bytes stored. When
// write fails the object is not created (the upload is aborted); when the upload fails,
// write sees an error from its writer and the upload's error is returned.
func PutFunc(ctx context.Context, st Store, key string, opts PutOptions, write func(w io.Writer) error) (int64, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := st.Put(ctx, key, pr, opts)
		_ = pr.CloseWithError(errUploadEnded) // a Put that gave up early unblocks the writer
		done <- err
	}()
	var n countingWriter
	werr := write(io.MultiWriter(pw, &n))
	_ = pw.CloseWithError(werr) // nil: the upload sees the end of the data
	putErr := <-done
	switch {
	case putErr != nil && werr != nil && !errors.Is(werr, errUploadEnded):
		return 0, errors.Join(werr, putErr)
	case putErr != nil:
		return 0, putErr
	case werr != nil:
		return 0, werr
	}
	return n.n, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }
