package wal_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

const seg1 = "000000010000000000000001"

// TestArchiveRestoreRoundTrip: the object lands in barman-cloud's layout, readable by any
// gzip reader (barman's Python one included), and restores byte-identical.
func TestArchiveRestoreRoundTrip(t *testing.T) {
	for _, kind := range storeKinds {
		for _, comp := range []struct{ name, ext string }{{"gzip", ".gz"}, {"zstd", ".zst"}, {"none", ""}} {
			t.Run(kind+"/"+comp.name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, kind, stores.WALSettings{Compression: comp.name})
				data := segment(7301234567890123456)
				if err := e.archive(t, e.writeWAL(t, seg1, data, false), nil); err != nil {
					t.Fatal(err)
				}
				stored := e.object(t, "pg-main/wals/0000000100000000/"+seg1+comp.ext)
				if comp.name == "gzip" {
					zr, err := stdgzip.NewReader(bytes.NewReader(stored))
					if err != nil {
						t.Fatal(err)
					}
					if plain, err := io.ReadAll(zr); err != nil || !bytes.Equal(plain, data) {
						t.Fatalf("the standard gzip reader gets %d bytes, %v", len(plain), err)
					}
				}
				got, err := e.restore(t, seg1, wal.RestoreRecovery)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("restore: %d bytes, %v", len(got), err)
				}
				rec, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", seg1)
				if err != nil || !ok || rec.SystemID != 7301234567890123456 || rec.Size != segSize || rec.StoredSize != int64(len(stored)) {
					t.Fatalf("catalog record %+v %v %v", rec, ok, err)
				}
			})
		}
	}
}

// TestArchiveIsIdempotentAndNeverOverwrites: the same bytes again succeed; different bytes
// under an archived name fail and leave the archived object untouched, whether the first
// copy is in the catalog or only in the store (written by barman or before a lost catalog).
func TestArchiveIsIdempotentAndNeverOverwrites(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{})
			data := segment(42)
			path := e.writeWAL(t, seg1, data, false)
			if err := e.archive(t, path, nil); err != nil {
				t.Fatal(err)
			}
			key := "pg-main/wals/0000000100000000/" + seg1 + ".gz"
			before := e.object(t, key)
			if err := e.archive(t, path, nil); err != nil {
				t.Fatalf("same bytes again: %v", err)
			}
			e.writeWAL(t, seg1, segment(42), false)
			var conflict *wal.ConflictError
			if err := e.archive(t, path, nil); !errors.As(err, &conflict) {
				t.Fatalf("different bytes: %v, want ConflictError", err)
			}
			if !bytes.Equal(e.object(t, key), before) {
				t.Fatal("the archived object was overwritten")
			}

			// Only in the store, as barman-cloud-wal-archive leaves it (gzip, no catalog row).
			seg2 := "000000010000000000000002"
			barman := addressed(seg2, segment(42))
			var gz bytes.Buffer
			zw := stdgzip.NewWriter(&gz)
			_, _ = zw.Write(barman)
			_ = zw.Close()
			e.put(t, "pg-main/wals/0000000100000000/"+seg2+".gz", gz.Bytes())
			if err := e.archive(t, e.writeWAL(t, seg2, barman, false), nil); err != nil {
				t.Fatalf("same bytes as barman's copy: %v", err)
			}
			if _, ok, _ := e.catalog.File(ctxT(t), "main", "pg-main", seg2); !ok {
				t.Fatal("an adopted file must be recorded in the catalog")
			}
			seg3 := "000000010000000000000003"
			e.put(t, "pg-main/wals/0000000100000000/"+seg3, segment(1)) // uncompressed, other bytes
			if err := e.archive(t, e.writeWAL(t, seg3, segment(42), false), nil); !errors.As(err, &conflict) {
				t.Fatalf("different bytes than an uncatalogued object: %v, want ConflictError", err)
			}
		})
	}
}

func TestArchiveRejectsBadInput(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	var inv *input.Error
	for _, p := range []string{filepath.Join(e.pgdata, "pg_wal", "not-a-wal")} {
		if err := e.archive(t, p, nil); !errors.As(err, &inv) || inv.Field != "source_file_name" {
			t.Errorf("archive %q: %v, want InvalidError on source_file_name", p, err)
		}
	}
	if err := e.archive(t, filepath.Join(e.pgdata, "pg_wal", seg1), nil); !errors.Is(err, wal.ErrSourceMissing) {
		t.Errorf("missing source: %v, want ErrSourceMissing", err)
	}
}

// TestParallelArchiveShipsReadySegments: with maxParallel 3 one call ships the requested
// segment and the next two .ready ones; their own calls then succeed at once, even with
// the local file gone (proof that nothing was read or uploaded again).
func TestParallelArchiveShipsReadySegments(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{MaxParallel: 3})
			names := []string{seg1, "000000010000000000000002", "000000010000000000000003", "000000010000000000000004"}
			paths := make([]string, len(names))
			for i, n := range names {
				paths[i] = e.writeWAL(t, n, segment(9), true)
			}
			e.writeWAL(t, "00000002.history", []byte("1\t0/3000000\tno recovery target specified\n"), false)
			if err := e.archive(t, paths[0], nil); err != nil {
				t.Fatal(err)
			}
			for i, n := range names {
				_, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", n)
				if err != nil || ok != (i < 3) {
					t.Fatalf("%s archived=%v (%v); want the requested and the next two", n, ok, err)
				}
			}
			for _, p := range paths[1:3] {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := e.archive(t, p, nil); err != nil {
					t.Fatalf("call for a segment shipped ahead: %v", err)
				}
			}
			if err := e.archive(t, paths[1], nil); !errors.Is(err, wal.ErrSourceMissing) {
				t.Fatalf("a segment is remembered for one call only: %v", err)
			}
		})
	}
}

// TestArchiveStreamsLargeSegments: files over the in-memory limit (wal_segment_size can be
// up to 1 GiB; the limit is 64 MiB) are compressed through a pipe into a multipart upload,
// with the same never-overwrite guarantee.
func TestArchiveStreamsLargeSegments(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			// A buffer limit below the segment size, as 64 MiB is below a 128 MiB segment.
			e := newEnvWith(t, kind, stores.WALSettings{}, wal.Options{BufferLimit: segSize / 4})
			data := segment(3)
			clear(data[segSize/2:]) // compressible, so stored < size proves compression ran
			path := e.writeWAL(t, seg1, data, false)
			if err := e.archive(t, path, nil); err != nil {
				t.Fatal(err)
			}
			if err := e.archive(t, path, nil); err != nil {
				t.Fatalf("again: %v", err)
			}
			got, err := e.restore(t, seg1, wal.RestoreRecovery)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("restore: %d bytes, %v", len(got), err)
			}
			rec, _, _ := e.catalog.File(ctxT(t), "main", "pg-main", seg1)
			if rec.Size != int64(len(data)) || rec.StoredSize <= 0 || rec.StoredSize >= rec.Size {
				t.Fatalf("record sizes %d/%d", rec.StoredSize, rec.Size)
			}
		})
	}
}
