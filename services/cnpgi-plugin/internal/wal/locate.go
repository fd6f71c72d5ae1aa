package wal

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"regexp"
	"strings"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// located is an archived WAL file found in a store.
type located struct {
	Key         string
	Compression Compression
	Size        int64 // stored bytes
	// Partial is set when a segment was found only as its .partial file (barman's
	// substitution on restore).
	Partial bool
}

// locate finds name for restoring: the catalog knows what we archived; anything else
// (barman's archives, a lost catalog) is found by listing. A segment archived only as
// <name>.partial is restored in its place, as barman-cloud-wal-restore does: the last
// segment of an old timeline after a promotion exists only in that form.
func (s *Service) locate(ctx context.Context, t Target, fn FileName) (located, error) {
	if rec, ok := s.catalog.lookup(ctx, t.Store.Name, t.Server, fn.Name); ok {
		return located{Key: rec.Key, Compression: rec.Compression, Size: rec.StoredSize}, nil
	}
	loc, err := findObject(ctx, t, fn, fn.Kind == KindSegment)
	if err != nil {
		return located{}, err
	}
	if loc == nil {
		return located{}, ErrNotFound
	}
	return *loc, nil
}

// otherSuffixRE is what may follow a WAL file's name in a key besides a compression we
// read: a .partial or .backup form of the same segment (other files), or an extension of a
// compression we do not know, which must not pass for "not archived".
var (
	partialRE     = regexp.MustCompile(`^\.partial`)
	backupRE      = regexp.MustCompile(`^\.[0-9A-F]{8}\.backup`)
	unknownCompRE = regexp.MustCompile(`^\.[A-Za-z0-9]{1,16}$`)
)

// findObject lists the keys starting with the file's key and picks the one whose suffix is
// a compression we read; with partial, a segment's .partial file (any compression) when the
// segment itself is not there. One listing finds the file whatever compression wrote it.
// An object under the exact name with a suffix we cannot read is an *UnreadableError, never
// "not found".
func findObject(ctx context.Context, t Target, fn FileName, partial bool) (*located, error) {
	base := baseKey(t.Server, fn)
	var sub *located
	for info, err := range t.Store.Store.List(ctx, base) {
		if err != nil {
			return nil, err
		}
		suffix := strings.TrimPrefix(info.Key, base)
		if c, ok := compressionOfSuffix(suffix); ok {
			return &located{Key: info.Key, Compression: c, Size: info.Size}, nil
		}
		if rest, ok := strings.CutPrefix(suffix, ".partial"); ok && partial && sub == nil && fn.Kind == KindSegment {
			if c, ok := compressionOfSuffix(rest); ok {
				sub = &located{Key: info.Key, Compression: c, Size: info.Size, Partial: true}
			}
			continue
		}
		if partialRE.MatchString(suffix) || backupRE.MatchString(suffix) {
			continue
		}
		if unknownCompRE.MatchString(suffix) {
			return nil, &UnreadableError{Server: t.Server, Name: fn.Name, Key: info.Key}
		}
	}
	return sub, nil
}

// Find returns the key under which the WAL file name is archived in t's store (whatever
// its compression), or "" when it is not; an object in a compression the plugin cannot
// read is an *UnreadableError.
func Find(ctx context.Context, t Target, name string) (string, error) {
	fn, err := ParseFileName(name)
	if err != nil {
		return "", err
	}
	loc, err := findObject(ctx, t, fn, false)
	if err != nil || loc == nil {
		return "", err
	}
	return loc.Key, nil
}

// hashObject returns the SHA-256 of an object's plaintext (decrypted, uncompressed), so
// that idempotent archiving compares what PostgreSQL wrote, not ciphertext whose nonces
// differ on every upload.
func hashObject(ctx context.Context, st *stores.Named, loc located) ([32]byte, error) {
	var sum [32]byte
	d, err := openObject(ctx, st, loc.Key, loc.Compression)
	if err != nil {
		return sum, err
	}
	defer d.Close()
	h := sha256.New()
	if _, err := io.Copy(h, d); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// isNotFound reports a missing object in any store.
func isNotFound(err error) bool { return errors.Is(err, objectstore.ErrNotFound) }
