package wal_test

import (
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// FuzzParseFileName: WAL names come from clients (source_wal_name, the base name of
// source_file_name, first_required_wal); a parsed name must be exactly one of the four
// forms and safe as an object-key segment, and errors stay short.
func FuzzParseFileName(f *testing.F) {
	for _, seed := range []string{
		"000000010000000000000001", "00000002.history", "000000010000000000000002.00000028.backup",
		"00000001000000000000000A.partial", "0000000100000000000000", "../../etc/passwd", "000000010000000000000001\x00",
		"00000001000000FF000000FF", "ffffffffffffffffffffffff", "FFFFFFFF.history", strings.Repeat("0", 100),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		fn, err := wal.ParseFileName(name)
		if err != nil {
			if len(err.Error()) > 512 { // a quoted 64-byte prefix of escaped bytes, and the reason
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if fn.Name != name || strings.ContainsAny(name, "/\x00.") && fn.Kind == wal.KindSegment {
			t.Fatalf("%q parsed as %+v", name, fn)
		}
		if strings.Contains(name, "/") || strings.Contains(name, "..") {
			t.Fatalf("%q is not a safe key segment but parsed", name)
		}
		if fn.Kind == wal.KindSegment {
			for _, size := range []int64{1 << 20, 16 << 20, 1 << 30, 12345} {
				if next := fn.Next(size); len(next.Name) != 24 || next.Timeline != fn.Timeline {
					t.Fatalf("Next(%d) of %s = %+v", size, name, next)
				}
			}
		}
		if d := fn.HashDir(); d != "" && d != name[:16] {
			t.Fatalf("HashDir of %s = %q", name, d)
		}
	})
}

// FuzzParseObjectKey: keys listed from a store (ours or barman's) map back to a WAL name
// only when the key is exactly where that name is archived.
func FuzzParseObjectKey(f *testing.F) {
	for _, seed := range []string{
		"pg/wals/0000000100000000/000000010000000000000001.gz", "pg/wals/00000002.history",
		"pg/wals/0000000100000000/000000010000000000000001.partial.snappy", "pg/wals/0000000200000000/000000010000000000000001",
		"pg/base/20260101T000000/backup.info", "pg/wals/x", "other/wals/00000002.history.lz4",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		fn, comp, ok := wal.ParseObjectKey("pg", key)
		if !ok {
			return
		}
		if !strings.HasPrefix(key, "pg/wals/") || !strings.HasSuffix(key, fn.Name+comp.Ext()) {
			t.Fatalf("%q parsed as %s %s", key, fn.Name, comp)
		}
	})
}
