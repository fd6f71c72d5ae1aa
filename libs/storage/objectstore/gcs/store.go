// Package gcs keeps objects in a Google Cloud Storage bucket behind objectstore.Store. It is
// a package of its own so that services storing only in S3 or on disk do not link Google's
// SDK.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// Store is a store in one GCS bucket; objects live under Options.Prefix. Unsized or large
// bodies go up as resumable uploads read from the caller's reader one chunk at a time
// (ChunkSize of memory per upload).
type Store struct {
	client    *storage.Client
	bucket    *storage.BucketHandle
	prefix    string
	chunkSize int
	describe  slog.Value
}

var _ objectstore.Store = (*Store)(nil)

// Close releases the client's idle connections.
func (s *Store) Close() error { return s.client.Close() }

// LogValue describes the store without credentials.
func (s *Store) LogValue() slog.Value { return s.describe }

func (s *Store) name(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

// Put uploads r. A body that fits in one chunk is one request; anything larger is a
// resumable upload finalized only after the reader's last byte, so a failing reader or a
// canceled context leaves no object. IfAbsent is the precondition ifGenerationMatch=0: GCS
// refuses atomically to replace an object (ErrExists).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts objectstore.PutOptions) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	obj := s.bucket.Object(s.name(key))
	if opts.IfAbsent {
		// ifGenerationMatch=0 makes the upload idempotent, so the SDK retries it as is.
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	} else {
		// Replacing an object with the same bytes is idempotent for this store's callers.
		obj = obj.Retryer(storage.WithPolicy(storage.RetryAlways))
	}
	w := obj.NewWriter(wctx)
	w.ChunkSize = s.chunkSize
	w.ContentType = "application/octet-stream"
	n, err := io.Copy(w, r)
	if err == nil && opts.Size >= 0 && n != opts.Size {
		err = fmt.Errorf("the reader yielded %d bytes, not the %d announced", n, opts.Size)
	}
	if err != nil {
		// Cancel before Close: Close alone would finalize the partial upload.
		cancel()
		_ = w.Close()
		return fmt.Errorf("gcs store: put %s: %w", objectstore.Quote(key), s.classify(ctx, err, key, true))
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("gcs store: put %s: %w", objectstore.Quote(key), s.classify(ctx, err, key, true))
	}
	return nil
}

// Get streams the object's stored bytes.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	return s.read(ctx, key, 0, -1)
}

// GetRange reads length bytes from offset with a ranged media download.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if offset < 0 {
		return nil, objectstore.ObjectInfo{}, fmt.Errorf("gcs store: get %s: negative offset %d", objectstore.Quote(key), offset)
	}
	if length == 0 {
		info, err := s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	return s.read(ctx, key, offset, length)
}

func (s *Store) read(ctx context.Context, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if err := objectstore.ValidateKey(key); err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	// Objects this store writes carry no Content-Encoding, so GCS serves them as stored.
	r, err := s.bucket.Object(s.name(key)).NewRangeReader(ctx, offset, length)
	if errors.Is(classifyStatus(err), errRangeNotSatisfiable) {
		// A range past the end: nothing to read, as from a file.
		info, err := s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	if err != nil {
		return nil, objectstore.ObjectInfo{}, fmt.Errorf("gcs store: get %s: %w", objectstore.Quote(key), s.classify(ctx, err, key, false))
	}
	return r, objectstore.ObjectInfo{Key: key, Size: r.Attrs.Size, ModTime: r.Attrs.LastModified}, nil
}

// Stat reads the object's metadata.
func (s *Store) Stat(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := objectstore.ValidateKey(key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	a, err := s.bucket.Object(s.name(key)).Attrs(ctx)
	if err != nil {
		return objectstore.ObjectInfo{}, fmt.Errorf("gcs store: stat %s: %w", objectstore.Quote(key), s.classify(ctx, err, key, false))
	}
	return objectstore.ObjectInfo{Key: key, Size: a.Size, ModTime: a.Updated}, nil
}

// Delete removes the object; a missing one is not an error (a missing bucket is).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return err
	}
	err := s.bucket.Object(s.name(key)).Delete(ctx)
	if err == nil {
		return nil
	}
	if err = s.classify(ctx, err, key, false); errors.Is(err, objectstore.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("gcs store: delete %s: %w", objectstore.Quote(key), err)
}

// List pages through the bucket's objects under the prefix; GCS lists in key (byte) order.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[objectstore.ObjectInfo, error] {
	return func(yield func(objectstore.ObjectInfo, error) bool) {
		full := s.name(prefix)
		if prefix == "" && s.prefix != "" {
			full = s.prefix + "/"
		}
		strip := ""
		if s.prefix != "" {
			strip = s.prefix + "/"
		}
		q := &storage.Query{Prefix: full, Projection: storage.ProjectionNoACL}
		if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
			yield(objectstore.ObjectInfo{}, fmt.Errorf("gcs store: list: %w", err))
			return
		}
		it := s.bucket.Objects(ctx, q)
		for {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return
			}
			if err != nil {
				yield(objectstore.ObjectInfo{}, fmt.Errorf("gcs store: list %s: %w", objectstore.Quote(prefix), s.classify(ctx, err, "", false)))
				return
			}
			key, ok := strings.CutPrefix(a.Name, strip)
			if !ok {
				continue
			}
			if !yield(objectstore.ObjectInfo{Key: key, Size: a.Size, ModTime: a.Updated}, nil) {
				return
			}
		}
	}
}
