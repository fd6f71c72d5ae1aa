// Package objectstore keeps objects in S3-compatible buckets or POSIX directories behind
// one small interface: streaming puts (multipart uploads on S3, no temporary copy on local
// disk), conditional puts that never replace an object, streaming and ranged gets, ordered
// listings and deletes.
package objectstore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// Store is one object store. Keys are relative, "/"-separated paths (no empty, "." or ".."
// segments); the store adds its own prefix. Implementations are safe for concurrent use.
type Store interface {
	// Put stores the bytes read from r under key. With PutOptions.IfAbsent an existing object
	// is never replaced: Put fails with ErrExists. The object appears whole or not at all.
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) error
	// Get streams the object at key; the caller closes the reader. ErrNotFound when absent.
	Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// GetRange streams length bytes of the object from offset (length < 0: to the end); the
	// ObjectInfo describes the whole object. A range past the end yields what exists.
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, ObjectInfo, error)
	// Stat describes the object at key. ErrNotFound when absent.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List yields the objects whose keys start with prefix, in key order. Iteration stops at
	// the first error, which is yielded with a zero ObjectInfo.
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]
	// Delete removes the object at key; a missing object is not an error.
	Delete(ctx context.Context, key string) error
}

// PutOptions tune one Put.
type PutOptions struct {
	// IfAbsent refuses to replace an existing object (S3 If-None-Match: *, POSIX link(2)).
	IfAbsent bool
	// Size is the number of bytes r will yield, or -1 when unknown (S3 then uses a multipart
	// upload whenever the data outgrows one part). 0 means an empty object.
	Size int64
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	// Key is relative to the store's prefix.
	Key string
	// Size is the stored size in bytes.
	Size int64
	// ModTime is when the object was last written.
	ModTime time.Time
}

var (
	// ErrNotFound: no object under the key.
	ErrNotFound = errors.New("object not found")
	// ErrExists: Put with IfAbsent found an object already stored under the key.
	ErrExists = errors.New("object already exists")
	// ErrDenied: the store refused the credentials or the operation (S3 403, EACCES).
	ErrDenied = errors.New("access denied by the object store")
	// ErrBucketMissing: the configured bucket does not exist (a configuration error, not a
	// missing object).
	ErrBucketMissing = errors.New("bucket does not exist")
	// ErrInvalidKey: the key is not a valid object key (ValidateKey).
	ErrInvalidKey = errors.New("invalid object key")
)

// MaxKeyLen is S3's limit on a key's length in bytes; the same holds for POSIX stores so
// that keys stay portable.
const MaxKeyLen = 1024

// ValidateKey rejects keys that could escape the store's prefix or are not portable between
// S3 and POSIX stores. Errors wrap ErrInvalidKey and quote at most a short prefix of the key.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %s: %s", ErrInvalidKey, input.Quote(key), why) }
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/"):
		return bad("must not start or end with /")
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("has an empty, . or .. segment")
		}
		if strings.ContainsRune(seg, 0) {
			return bad("contains a NUL byte")
		}
	}
	return nil
}

// Quote quotes a caller's string (a key) for an error: at most a short prefix, with the full
// length noted when cut. It is the platform's input.Quote, here for the store's callers.
func Quote(s string) string { return input.Quote(s) }

// joinPrefix joins a store prefix ("" or "a/b") and a key.
func joinPrefix(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "/" + key
}

// CleanPrefix normalises a configured prefix: no leading or trailing slashes.
func CleanPrefix(p string) string { return strings.Trim(p, "/") }
