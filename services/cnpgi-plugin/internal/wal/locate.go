package wal

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/objectstore"
)

// located is an archived WAL file found in a store.
type located struct {
	Key         string
	Compression Compression
	Size        int64 // stored bytes
}

// locate finds name for restoring: the catalog knows what we archived; anything else
// (barman's archives, a lost catalog) is found by listing.
func (s *Service) locate(ctx context.Context, t Target, fn FileName) (located, error) {
	rec, ok, err := s.catalog.File(ctx, t.Store.Name, t.Server, fn.Name)
	if err != nil {
		return located{}, err
	}
	if ok {
		return located{Key: rec.Key, Compression: rec.Compression, Size: rec.StoredSize}, nil
	}
	loc, err := s.findObject(ctx, t, fn)
	if err != nil {
		return located{}, err
	}
	if loc == nil {
		return located{}, ErrNotFound
	}
	return *loc, nil
}

// findObject lists the keys starting with the file's key and picks the one whose suffix is
// a compression we read. One listing finds the file whatever compression wrote it; names
// that merely share the prefix (.partial, .backup) have other suffixes and are skipped.
func (s *Service) findObject(ctx context.Context, t Target, fn FileName) (*located, error) {
	base := baseKey(t.Server, fn)
	for info, err := range t.Store.Store.List(ctx, base) {
		if err != nil {
			return nil, err
		}
		if c, ok := compressionOfSuffix(strings.TrimPrefix(info.Key, base)); ok {
			return &located{Key: info.Key, Compression: c, Size: info.Size}, nil
		}
	}
	return nil, nil
}

// hashObject returns the SHA-256 of an object's plaintext (decrypted, uncompressed), so
// that idempotent archiving compares what PostgreSQL wrote, not ciphertext whose nonces
// differ on every upload.
func hashObject(ctx context.Context, st *objectstore.Named, loc located) ([32]byte, error) {
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

// checkEmpty implements check_empty_wal_archive: the server's archive must hold nothing but
// files this same PostgreSQL system (same system identifier) archived through this plugin.
// A passed check is remembered, so the calls that follow the first archive stay cheap.
func (s *Service) checkEmpty(ctx context.Context, t Target, sourcePath string) error {
	local, err := hashFile(sourcePath)
	if err != nil {
		return err
	}
	sysID := uint64(0)
	if local.hasHdr {
		sysID = local.header.SystemID
	}
	memo := t.id() + "\x00" + strconv.FormatUint(sysID, 10)
	if _, ok := s.checked.Load(memo); ok && sysID != 0 {
		return nil
	}
	prefix := walsPrefix(t.Server)
	for info, err := range t.Store.Store.List(ctx, prefix) {
		if err != nil {
			return err
		}
		name := stripCompression(path.Base(info.Key))
		rec, ok, err := s.catalog.File(ctx, t.Store.Name, t.Server, name)
		if err != nil {
			return err
		}
		if ok && sysID != 0 && rec.SystemID == sysID {
			continue
		}
		return &NotEmptyError{Store: t.Store.Name, Server: t.Server, Key: info.Key}
	}
	if sysID != 0 {
		s.checked.Store(memo, true)
	}
	return nil
}

// isNotFound reports a missing object in any store.
func isNotFound(err error) bool { return errors.Is(err, objectstore.ErrNotFound) }
