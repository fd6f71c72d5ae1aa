package wal_test

import (
	"bytes"
	"errors"
	"os/exec"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// compressed encodes data as barman-cloud would store it with kind: our encoders for the
// kinds we write (their formats are checked against Python's in libs/storage/compression),
// the xz and bzip2 commands for the others.
func compressed(t *testing.T, kind compression.Kind, data []byte) []byte {
	t.Helper()
	if !kind.Writable() {
		tool := map[compression.Kind]string{compression.XZ: "xz", compression.Bzip2: "bzip2"}[kind]
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, tool+" is not installed (apt-get install xz-utils bzip2)")
		}
		cmd := exec.Command(tool, "-c")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var buf bytes.Buffer
	w, err := compression.Writer(kind, &buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEveryBarmanCompressionRestores (issue #14, defect 1): an archive barman wrote with
// any compression it has (gzip, bzip2, snappy, lz4, xz, zstd) restores byte-identical; the
// plugin used to skip .snappy, .lz4 and .xz objects, so recovery over such an archive
// ended early with NotFound.
func TestEveryBarmanCompressionRestores(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	for i, kind := range compression.Kinds() {
		name := []string{"000000010000000000000011", "000000010000000000000012", "000000010000000000000013",
			"000000010000000000000014", "000000010000000000000015", "000000010000000000000016", "000000010000000000000017"}[i]
		data := addressed(name, segment(5))
		e.put(t, "pg-main/wals/0000000100000000/"+name+kind.Ext(), compressed(t, kind, data))
		got, err := e.restore(t, name, wal.RestoreRecovery)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes, %v", kind, len(got), err)
		}
	}
}

// TestUnreadableObjectIsNeverNotFound: an object under the file's name in a compression
// the plugin cannot read fails clearly on restore (NotFound would end recovery silently)
// and on archive (a second object beside it would be written otherwise).
func TestUnreadableObjectIsNeverNotFound(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{MaxParallel: 2})
	data := segment(5)
	e.put(t, "pg-main/wals/0000000100000000/"+seg1+".lzo", []byte("not ours to read"))
	var unread *wal.UnreadableError
	if _, err := e.restore(t, seg1, wal.RestoreRecovery); !errors.As(err, &unread) || errors.Is(err, wal.ErrNotFound) {
		t.Fatalf("restore: %v, want UnreadableError", err)
	}
	if err := e.archive(t, e.writeWAL(t, seg1, data, false), nil); !errors.As(err, &unread) {
		t.Fatalf("archive: %v, want UnreadableError", err)
	}
	if keys := e.keys(t); !slices.Equal(keys, []string{"pg-main/wals/0000000100000000/" + seg1 + ".lzo"}) {
		t.Fatalf("the archive now holds %v", keys)
	}
}

// TestArchiveComparesWithAnotherCompression: a segment already archived under another
// compression (barman's snappy, say) is compared with: the same bytes succeed without a
// second object, other bytes are AlreadyExists.
func TestArchiveComparesWithAnotherCompression(t *testing.T) {
	for _, kind := range []compression.Kind{compression.Snappy, compression.LZ4, compression.XZ} {
		t.Run(string(kind), func(t *testing.T) {
			e := newEnv(t, "posix", stores.WALSettings{Compression: "gzip"})
			data := addressed(seg1, segment(5))
			key := "pg-main/wals/0000000100000000/" + seg1 + kind.Ext()
			e.put(t, key, compressed(t, kind, data))
			if err := e.archive(t, e.writeWAL(t, seg1, data, false), nil); err != nil {
				t.Fatalf("same bytes: %v", err)
			}
			const seg2 = "000000010000000000000002"
			other := addressed(seg2, segment(5))
			e.put(t, "pg-main/wals/0000000100000000/"+seg2+kind.Ext(), compressed(t, kind, other))
			var conflict *wal.ConflictError
			if err := e.archive(t, e.writeWAL(t, seg2, segment(5), false), nil); !errors.As(err, &conflict) {
				t.Fatalf("other bytes: %v, want ConflictError", err)
			}
			want := []string{key, "pg-main/wals/0000000100000000/" + seg2 + kind.Ext()}
			if keys := e.keys(t); !slices.Equal(keys, want) {
				t.Fatalf("the archive holds %v, want only %v", keys, want)
			}
		})
	}
}

// keys lists every object of the store.
func (e *env) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	for info, err := range e.target.Store.Store.List(ctxT(t), "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}
