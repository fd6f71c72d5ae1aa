package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// TestStatusCountsWhatTheStoreHolds (issue #14, defect 8): a server that barman (or an
// earlier installation) archived shows its segments, not segments=0 from an empty catalog.
func TestStatusCountsWhatTheStoreHolds(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	for i := 3; i <= 6; i++ {
		name := fmt.Sprintf("0000000100000000000000%02X", i)
		e.put(t, "pg-main/wals/0000000100000000/"+name+".gz", compressed(t, compression.Gzip, addressed(name, segment(9))))
	}
	e.put(t, "pg-main/wals/00000002.history", []byte("1\t0/3000000\tx\n"))
	e.put(t, "pg-main/wals/0000000100000000/000000010000000000000003.00000028.backup.gz", compressed(t, compression.Gzip, []byte("x")))
	e.put(t, "pg-main/base/20260101T000000/backup.info", []byte("status=DONE\n"))
	if err := e.archive(t, e.writeWAL(t, "000000010000000000000007", segment(9), false), nil); err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.Status(ctxT(t), e.target)
	if err != nil {
		t.Fatal(err)
	}
	if st.Segments != 5 || st.CatalogSegments != 1 || st.FirstWAL != "000000010000000000000003" ||
		st.LastWAL != "000000010000000000000007" || st.Bytes == 0 || st.LastArchivedAt.IsZero() {
		t.Fatalf("status %+v", st)
	}
}

// TestSpoolIsEmptiedNotRemoved (issue #14, defect 4): at start the spool's contents go but
// the directory stays, so a spool whose parent the plugin may not write (a volume's mount
// point) does not stop the plugin.
func TestSpoolIsEmptiedNotRemoved(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "mount", "spool")
	if err := os.MkdirAll(filepath.Join(spool, "main", "pg"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spool, "main", "pg", "000000010000000000000001"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(spool)
	if err != nil {
		t.Fatal(err)
	}
	// Without write permission on the parent, removing the spool fails (for non-root).
	if err := os.Chmod(filepath.Dir(spool), 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Dir(spool), 0o700) })
	svc, err := wal.NewService(&catalog.Catalog{}, wal.Options{SpoolDir: spool})
	if err != nil {
		t.Fatalf("start with a spool in a read-only parent: %v", err)
	}
	svc.Close()
	after, err := os.Stat(spool)
	if err != nil {
		t.Fatal(err)
	}
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino {
		t.Fatal("the spool directory was removed and created again, not emptied")
	}
	if entries, _ := os.ReadDir(spool); len(entries) != 0 {
		t.Fatalf("the spool still holds %v", entries)
	}
}

// TestRestoreSubstitutesPartial: a segment archived only as <name>.partial (the last segment
// of an old timeline after a promotion) is restored in its place, as barman-cloud-wal-restore
// does; the full segment wins when both exist.
func TestRestoreSubstitutesPartial(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	partial := segment(3)
	if err := e.archive(t, e.writeWAL(t, seg1+".partial", partial, false), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := e.restore(t, seg1, wal.RestoreRecovery); err != nil || !bytes.Equal(got, partial) {
		t.Fatalf("only the .partial: %d bytes, %v", len(got), err)
	}
	full := segment(3)
	if err := e.archive(t, e.writeWAL(t, seg1, full, false), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := e.restore(t, seg1, wal.RestoreRecovery); err != nil || !bytes.Equal(got, full) {
		t.Fatalf("the full segment must win: %v", err)
	}
	if _, err := e.restore(t, "000000020000000000000001.partial", wal.RestoreRecovery); !errors.Is(err, wal.ErrNotFound) {
		t.Fatalf("a missing .partial: %v", err)
	}
}

// TestEndOfWALFlagForStreamingStandbys: when a standby that can stream reads ahead past the
// end of the archive, the next call the spool cannot serve answers NotFound at once (and
// only that one), so PostgreSQL switches to streaming; without streaming the archive is
// asked every time.
func TestEndOfWALFlagForStreamingStandbys(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			e := newEnv(t, "posix", stores.WALSettings{MaxParallel: 3})
			const seg2, seg3 = "000000010000000000000002", "000000010000000000000003"
			for _, n := range []string{seg1, seg2} {
				if err := e.archive(t, e.writeWAL(t, n, segment(4), false), nil); err != nil {
					t.Fatal(err)
				}
			}
			restore := func(name string) ([]byte, error) {
				dest := filepath.Join(e.pgdata, "pg_wal", "RECOVERYXLOG")
				err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: name, Destination: dest, DataDirs: []string{e.pgdata},
					Mode: wal.RestoreRecovery, StreamingAvailable: streaming})
				if err != nil {
					return nil, err
				}
				return os.ReadFile(dest)
			}
			if _, err := restore(seg1); err != nil { // reads ahead 2 (found) and 3 (the end)
				t.Fatal(err)
			}
			e.waitSpooled(t, seg2)
			// 3 must arrive after its read-ahead looked, or the read-ahead finds it.
			if err := e.svc.WaitReadAhead(ctxT(t), e.target, seg3); err != nil {
				t.Fatal(err)
			}
			data := segment(4)
			if err := e.archive(t, e.writeWAL(t, seg3, data, false), nil); err != nil { // 3 arrives late
				t.Fatal(err)
			}
			_, err := restore(seg3) // waits for the read-ahead of 3, which found nothing
			if streaming && !errors.Is(err, wal.ErrNotFound) {
				t.Fatalf("with streaming, the first call after the end of the archive: %v, want ErrNotFound", err)
			}
			if !streaming && err != nil {
				t.Fatalf("without streaming the archive is asked: %v", err)
			}
			if got, err := restore(seg3); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the flag answers one call only: %v", err)
			}
		})
	}
}
