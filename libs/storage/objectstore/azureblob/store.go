// Package azureblob is an objectstore.Store in an Azure Blob Storage container (Azure, or
// the Azurite emulator), with the credential forms barman-cloud accepts. It is a package of
// its own so that programs using only S3 or POSIX stores do not link the Azure SDK.
package azureblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

func (s *Store) name(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

func (s *Store) fail(op, key string, err error, ifAbsent bool) error {
	return fmt.Errorf("azure blob store: %s %s: %w", op, objectstore.Quote(key), s.classify(err, ifAbsent))
}

// Put sends a body of known size up to one block with a single Put Blob and stages anything
// else as blocks committed at the end (the SDK's UploadStream: Concurrency buffers of
// BlockSize). IfAbsent is If-None-Match: * on the Put Blob or on the Put Block List, so the
// service refuses to replace a blob atomically. A failing reader or a canceled context
// leaves only uncommitted blocks, which no read or listing sees and Azure discards.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts objectstore.PutOptions) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return err
	}
	var cond *blob.AccessConditions
	if opts.IfAbsent {
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	}
	bb := s.client.NewBlockBlobClient(s.name(key))
	var err error
	if opts.Size >= 0 && opts.Size <= s.blockSize {
		var body []byte
		if body, err = readExactly(r, opts.Size); err != nil {
			return fmt.Errorf("azure blob store: put %s: %w", objectstore.Quote(key), err)
		}
		_, err = bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{AccessConditions: cond})
	} else {
		_, err = bb.UploadStream(ctx, r, &blockblob.UploadStreamOptions{
			BlockSize: s.blockSize, Concurrency: s.concurrency, AccessConditions: cond,
		})
	}
	if err != nil {
		return s.fail("put", key, err, opts.IfAbsent)
	}
	return nil
}

// readExactly reads a body of announced size, refusing one that is shorter or longer.
func readExactly(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, size+1)
	n, err := io.ReadFull(r, buf)
	switch {
	case int64(n) == size && errors.Is(err, io.ErrUnexpectedEOF), n == 0 && size == 0 && errors.Is(err, io.EOF):
		return buf[:size], nil
	case err == nil:
		return nil, fmt.Errorf("the body is longer than its announced size %d", size)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("the body ended after %d of its announced %d bytes", n, size)
	}
	return nil, err
}

// Get streams the blob (a retrying reader: a dropped connection resumes where it stopped,
// as long as the blob was not replaced meanwhile).
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, objectstore.ObjectInfo, error) {
	return s.get(ctx, key, blob.HTTPRange{})
}

// GetRange downloads a byte range (x-ms-range: bytes=offset-end).
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if offset < 0 {
		return nil, objectstore.ObjectInfo{}, fmt.Errorf("azure blob store: get %s: negative offset %d", objectstore.Quote(key), offset)
	}
	if length == 0 {
		info, err := s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	r, info, err := s.get(ctx, key, blob.HTTPRange{Offset: offset, Count: max(length, 0)})
	if errors.Is(err, errRangeNotSatisfiable) {
		// A range past the end: nothing to read, as from a file.
		info, err = s.Stat(ctx, key)
		return io.NopCloser(strings.NewReader("")), info, err
	}
	return r, info, err
}

func (s *Store) get(ctx context.Context, key string, rng blob.HTTPRange) (io.ReadCloser, objectstore.ObjectInfo, error) {
	if err := objectstore.ValidateKey(key); err != nil {
		return nil, objectstore.ObjectInfo{}, err
	}
	resp, err := s.client.NewBlobClient(s.name(key)).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		return nil, objectstore.ObjectInfo{}, s.fail("get", key, err, false)
	}
	size := deref(resp.ContentLength)
	if total, ok := rangeTotal(deref(resp.ContentRange)); ok {
		size = total
	}
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3})
	return &readCloser{ReadCloser: body, store: s, key: key}, objectstore.ObjectInfo{Key: key, Size: size, ModTime: deref(resp.LastModified)}, nil
}

// readCloser passes a body's read errors through the store's redaction.
type readCloser struct {
	io.ReadCloser
	store *Store
	key   string
}

func (r *readCloser) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF { //nolint:errorlint // io.EOF is returned bare by contract
		err = r.store.fail("read", r.key, err, false)
	}
	return n, err
}

// Stat reads the blob's properties (a HEAD request).
func (s *Store) Stat(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	if err := objectstore.ValidateKey(key); err != nil {
		return objectstore.ObjectInfo{}, err
	}
	p, err := s.client.NewBlobClient(s.name(key)).GetProperties(ctx, nil)
	if err != nil {
		return objectstore.ObjectInfo{}, s.fail("stat", key, err, false)
	}
	return objectstore.ObjectInfo{Key: key, Size: deref(p.ContentLength), ModTime: deref(p.LastModified)}, nil
}

// Delete removes the blob with its snapshots; a missing blob is not an error, a missing
// container is.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objectstore.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.NewBlobClient(s.name(key)).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)})
	if err == nil {
		return nil
	}
	if err = s.classify(err, false); errors.Is(err, objectstore.ErrNotFound) && !errors.Is(err, objectstore.ErrBucketMissing) {
		return nil
	}
	return fmt.Errorf("azure blob store: delete %s: %w", objectstore.Quote(key), err)
}

// List pages through a flat List Blobs (committed blobs only), which Azure returns in
// lexicographic order of their names.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[objectstore.ObjectInfo, error] {
	return func(yield func(objectstore.ObjectInfo, error) bool) {
		full := s.name(prefix)
		strip := ""
		if s.prefix != "" {
			strip = s.prefix + "/"
			if prefix == "" {
				full = strip
			}
		}
		pages := s.client.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &full})
		for pages.More() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(objectstore.ObjectInfo{}, fmt.Errorf("azure blob store: list %s: %w", objectstore.Quote(prefix), s.classify(err, false)))
				return
			}
			for _, b := range page.Segment.BlobItems {
				key, ok := strings.CutPrefix(deref(b.Name), strip)
				if !ok {
					continue
				}
				info := objectstore.ObjectInfo{Key: key}
				if b.Properties != nil {
					info.Size, info.ModTime = deref(b.Properties.ContentLength), deref(b.Properties.LastModified)
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

// rangeTotal reads the blob's size from a Content-Range header ("bytes 0-99/1234").
func rangeTotal(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || total == "*" {
		return 0, false
	}
	var n int64
	if _, err := fmt.Sscan(total, &n); err != nil {
		return 0, false
	}
	return n, true
}

// deref reads an optional field of an SDK response.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
