package wal

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
)

// ParseObjectKey recognises an archived WAL file among a server's keys
// (<server>/wals/[<timeline+log>/]<name>[.gz|.zst|.snappy|...]): its parsed name and compression.
// ok is false for other objects.
func ParseObjectKey(server, key string) (FileName, Compression, bool) {
	rest, found := strings.CutPrefix(key, walsPrefix(server))
	if !found {
		return FileName{}, "", false
	}
	base := path.Base(rest)
	name := stripCompression(base)
	comp, known := compressionOfSuffix(strings.TrimPrefix(base, name))
	fn, err := ParseFileName(name)
	if err != nil || !known || baseKey(server, fn)+comp.Ext() != key {
		return FileName{}, "", false
	}
	return fn, comp, true
}

// Describe reads an archived object and returns the catalog record it deserves: the SHA-256
// and size of its uncompressed bytes and, for segments, the system identifier. It is how
// the catalog is rebuilt from a store.
func Describe(ctx context.Context, t Target, obj objectstore.ObjectInfo) (ArchivedFile, error) {
	fn, comp, ok := ParseObjectKey(t.Server, obj.Key)
	if !ok {
		return ArchivedFile{}, fmt.Errorf("%s is not an archived WAL file of server %s", obj.Key, t.Server)
	}
	d, err := openObject(ctx, t.Store, obj.Key, comp)
	if err != nil {
		return ArchivedFile{}, err
	}
	defer d.Close()
	var dg digest
	if _, err := io.Copy(&dg, d); err != nil {
		return ArchivedFile{}, fmt.Errorf("read %s: %w", obj.Key, err)
	}
	f := dg.finish().archived(t, source{name: fn}, obj.Key, comp, obj.Size)
	if !obj.ModTime.IsZero() {
		f.ArchivedAt = obj.ModTime
	}
	return f, nil
}
