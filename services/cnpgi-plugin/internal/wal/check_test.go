package wal_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// TestCheckEmptyWALArchive: an explicit check_empty_wal_archive=true passes on an empty
// archive and on the cluster's own earlier WAL, and refuses another system's WAL; false
// never checks; an absent field falls back to CloudNativePG's marker file in PGDATA, which
// is removed after the first successful archive, unless the skip annotation is set.
func TestCheckEmptyWALArchive(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{})
			const mine, theirs = 1001, 2002
			if err := e.archive(t, e.writeWAL(t, seg1, segment(mine), false), ptr(true)); err != nil {
				t.Fatalf("empty archive: %v", err)
			}
			if err := e.archive(t, e.writeWAL(t, "000000010000000000000002", segment(mine), false), ptr(true)); err != nil {
				t.Fatalf("the archive holds only our own WAL: %v", err)
			}

			other := newEnv(t, "posix", stores.WALSettings{})
			other.target, other.svc = e.target, e.svc // same archive, another cluster's pg_wal
			var notEmpty *wal.NotEmptyError
			err := other.archive(t, other.writeWAL(t, "000000010000000000000005", segment(theirs), false), ptr(true))
			if !errors.As(err, &notEmpty) || notEmpty.Server != "pg-main" {
				t.Fatalf("another system: %v, want NotEmptyError", err)
			}
			if err := other.archive(t, filepath.Join(other.pgdata, "pg_wal", "000000010000000000000005"), ptr(false)); err != nil {
				t.Fatalf("check_empty_wal_archive=false must not check: %v", err)
			}

			// An older operator: no field, the marker file decides.
			third := newEnv(t, "posix", stores.WALSettings{})
			third.target, third.svc = e.target, e.svc
			marker := filepath.Join(third.pgdata, wal.CheckEmptyMarker)
			if err := os.WriteFile(marker, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			path := third.writeWAL(t, "000000010000000000000009", segment(3003), false)
			if err := third.archive(t, path, nil); !errors.As(err, &notEmpty) {
				t.Fatalf("marker present, foreign WAL: %v, want NotEmptyError", err)
			}
			err = third.svc.Archive(ctxT(t), third.target, wal.ArchiveRequest{SourcePath: path, DataDirs: []string{third.pgdata}, SkipEmptyCheck: true})
			if err != nil {
				t.Fatalf("the skip annotation must disable the fallback check: %v", err)
			}
		})
	}
}

func TestCheckMarkerIsRemovedAfterTheFirstArchive(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	marker := filepath.Join(e.pgdata, wal.CheckEmptyMarker)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.archive(t, e.writeWAL(t, seg1, segment(5), false), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker still there after the first archive: %v", err)
	}
	// With the field present the plugin leaves the marker to the operator.
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.archive(t, e.writeWAL(t, "000000010000000000000002", segment(5), false), ptr(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("an explicit request must not touch the marker: %v", err)
	}
}

// TestCheckAcceptsTheClusterOwnBackupAndHistoryFiles (issue #14, defect 3): after a base
// backup, the .backup file (and a .history file) this same system archived through the
// plugin must not count as another cluster's WAL; they carry no system identifier of their
// own, so the archiving instance's (pg_control) is recorded with them.
func TestCheckAcceptsTheClusterOwnBackupAndHistoryFiles(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{})
			const mine = 4242
			e.setSystemID(t, mine)
			if err := e.archive(t, e.writeWAL(t, seg1, segment(mine), false), ptr(true)); err != nil {
				t.Fatal(err)
			}
			backupFile := e.writeWAL(t, "000000010000000000000001.00000028.backup",
				[]byte("START WAL LOCATION: 0/1000028 (file 000000010000000000000001)\nSTOP WAL LOCATION: 0/1000100 (file 000000010000000000000001)\n"), false)
			if err := e.archive(t, backupFile, ptr(false)); err != nil {
				t.Fatal(err)
			}
			history := e.writeWAL(t, "00000002.history", []byte("1\t0/3000000\tno recovery target specified\n"), false)
			if err := e.archive(t, history, ptr(false)); err != nil {
				t.Fatal(err)
			}
			rec, _, _ := e.catalog.File(ctxT(t), "main", "pg-main", "00000002.history")
			if rec.SystemID != mine {
				t.Fatalf("the history file's record has system id %d, want the instance's %d", rec.SystemID, mine)
			}
			// A fresh service (no remembered check) checks the archive again.
			fresh := *e
			svc, err := wal.NewService(e.catalog, wal.Options{SpoolDir: filepath.Join(t.TempDir(), "spool")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Close)
			fresh.svc = svc
			if err := fresh.archive(t, e.writeWAL(t, "000000010000000000000002", segment(mine), false), ptr(true)); err != nil {
				t.Fatalf("the cluster's own .backup and .history files: %v", err)
			}
			// Another system still fails on them.
			other := newEnv(t, "posix", stores.WALSettings{})
			other.target, other.svc, other.catalog = e.target, fresh.svc, e.catalog
			other.setSystemID(t, 777)
			var notEmpty *wal.NotEmptyError
			if err := other.archive(t, other.writeWAL(t, "000000010000000000000007", segment(777), false), ptr(true)); !errors.As(err, &notEmpty) {
				t.Fatalf("another system: %v, want NotEmptyError", err)
			}
		})
	}
}
