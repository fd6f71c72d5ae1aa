// Package objectstore holds the plugin's data: WAL segments (and later base backups) in named
// object stores, S3-compatible buckets or POSIX directories, behind one small interface.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
)

// Store is one object store. Keys are relative, "/"-separated paths (no empty, "." or ".."
// segments); the store adds its own prefix. Implementations are safe for concurrent use.
type Store interface {
	// Put stores the bytes read from r under key. With PutOptions.IfAbsent an existing object
	// is never replaced: Put fails with ErrExists. The object appears whole or not at all.
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) error
	// Get streams the object at key; the caller closes the reader. ErrNotFound when absent.
	Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
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
	// upload whenever the data outgrows one part).
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
	// ErrUnknownStore: no store with that name is configured.
	ErrUnknownStore = errors.New("unknown object store")
)

// ValidateKey rejects keys that could escape the store's prefix or are not portable between
// S3 and POSIX stores.
func ValidateKey(key string) error {
	if key == "" {
		return errors.New("empty object key")
	}
	if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("object key %q must not start or end with /", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("object key %q has an empty, . or .. segment", key)
		}
		if strings.ContainsRune(seg, 0) {
			return fmt.Errorf("object key %q contains a NUL byte", key)
		}
	}
	return nil
}

// joinPrefix joins a store prefix ("" or "a/b") and a key.
func joinPrefix(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "/" + key
}

// cleanPrefix normalises a configured prefix: no leading or trailing slashes.
func cleanPrefix(p string) string { return strings.Trim(p, "/") }
