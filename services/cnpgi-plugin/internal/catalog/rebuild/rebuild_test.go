package rebuild_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/rebuild"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal/waltest"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func openCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, pool, err := catalog.Open(context.Background(), testenv.DB(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return c
}

// segment is a 1 MiB WAL segment of system sysID.
// TestRebuildFromTheStore archives WAL through the WAL service with one catalog, then
// rebuilds a second, empty catalog from the store alone: same files, same checksums and
// system identifiers, plus the base backups; a second run changes nothing, and objects
// deleted from the store leave the catalog.
func TestRebuildFromTheStore(t *testing.T) {
	ctx := context.Background()
	st, err := objectstore.NewPOSIX(filepath.Join(t.TempDir(), "store"), true)
	if err != nil {
		t.Fatal(err)
	}
	named := &stores.Named{Name: "main", Kind: "posix", Store: st, WAL: stores.WALSettings{Compression: "zstd", MaxParallel: 1}}
	first := openCatalog(t)
	svc, err := wal.NewService(first, wal.Options{SpoolDir: filepath.Join(t.TempDir(), "spool"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	pgwal := filepath.Join(t.TempDir(), "pg_wal")
	if err := os.MkdirAll(filepath.Join(pgwal, "archive_status"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := wal.Target{Store: named, Server: "pg"}
	names := []string{"000000010000000000000001", "000000010000000000000002", "00000002.history"}
	// The instance's pg_control: the history file is recorded with its system identifier,
	// and a rebuild must give it the same one (from the segments).
	if err := os.MkdirAll(filepath.Join(filepath.Dir(pgwal), "global"), 0o700); err != nil {
		t.Fatal(err)
	}
	control := binary.LittleEndian.AppendUint64(nil, 7001)
	if err := os.WriteFile(filepath.Join(filepath.Dir(pgwal), "global", "pg_control"), control, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		data := waltest.Segment(name, 7001)
		if i == 2 {
			data = []byte("1\t0/3000000\tno recovery target specified\n")
		}
		p := filepath.Join(pgwal, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := svc.Archive(ctx, target, wal.ArchiveRequest{SourcePath: p, DataDirs: []string{filepath.Dir(pgwal)}, CheckEmpty: new(bool)}); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	info := &backup.Info{ID: "20260203T040000", Status: backup.StatusDone, Timeline: 1, BeginTime: end.Add(-time.Hour), EndTime: end,
		BeginWAL: names[0], EndWAL: names[1], BeginLSN: 0x1000028, EndLSN: 0x2000100, Version: 150020, SystemID: "7001"}
	for key, data := range map[string][]byte{backup.InfoKey("pg", info.ID): info.Encode(), backup.Dir("pg", info.ID) + "data.tar.gz": []byte("tar")} {
		if err := st.Put(ctx, key, bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
	}

	second := openCatalog(t)
	reps, err := rebuild.Run(ctx, second, named, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Server != "pg" || reps[0].WALAdded != 3 || reps[0].BackupsSaved != 1 {
		t.Fatalf("first rebuild: %+v", reps)
	}
	for _, name := range names {
		want, _, _ := first.File(ctx, "main", "pg", name)
		got, ok, err := second.File(ctx, "main", "pg", name)
		if err != nil || !ok || got.SHA256 != want.SHA256 || got.Size != want.Size || got.SystemID != want.SystemID ||
			got.Key != want.Key || got.Kind != want.Kind || got.Compression != compression.Zstd {
			t.Fatalf("%s: rebuilt %+v, archived %+v (%v)", name, got, want, err)
		}
	}
	recs, err := second.Backups(ctx, "main", "pg")
	if err != nil || len(recs) != 1 || recs[0].ID != info.ID || recs[0].EndLSN != info.EndLSN || recs[0].SystemID != 7001 ||
		recs[0].StoredSize != 3 || recs[0].Compression != compression.Gzip {
		t.Fatalf("rebuilt backups %+v %v", recs, err)
	}
	reps, err = rebuild.Run(ctx, second, named, []string{"pg"}, slog.New(slog.DiscardHandler))
	if err != nil || reps[0].WALAdded != 0 || reps[0].WALKept != 3 || reps[0].WALRemoved != 0 {
		t.Fatalf("second rebuild: %+v %v", reps, err)
	}
	// Objects deleted behind the plugin's back leave the catalog.
	if err := st.Delete(ctx, "pg/wals/0000000100000000/000000010000000000000001.zst"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, backup.InfoKey("pg", info.ID)); err != nil {
		t.Fatal(err)
	}
	reps, err = rebuild.Run(ctx, second, named, nil, slog.New(slog.DiscardHandler))
	if err != nil || reps[0].WALRemoved != 1 || reps[0].BackupsRemoved != 1 {
		t.Fatalf("rebuild after deletions: %+v %v", reps, err)
	}
	if _, ok, _ := second.File(ctx, "main", "pg", names[0]); ok {
		t.Fatal("deleted WAL still catalogued")
	}
}
