package wal_test

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"

	"github.com/plinth-dev/plinth/libs/platform/input"
)

func TestRestoreMissingIsNotFound(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{MaxParallel: 4})
			for _, name := range []string{seg1, "00000002.history", "000000010000000000000001.partial"} {
				if _, err := e.restore(t, name, wal.RestoreRecovery); !errors.Is(err, wal.ErrNotFound) {
					t.Errorf("restore %s: %v, want ErrNotFound", name, err)
				}
			}
			var inv *input.Error
			if _, err := e.restore(t, "../../etc/passwd", wal.RestoreRecovery); !errors.As(err, &inv) || inv.Field != "source_wal_name" {
				t.Errorf("bad name: %v", err)
			}
			// CloudNativePG's paths may be relative to PGDATA.
			err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: seg1, Destination: "pg_wal/RECOVERYXLOG", DataDirs: []string{e.pgdata}})
			if !errors.Is(err, wal.ErrNotFound) {
				t.Errorf("relative destination: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestRestoreReadsAhead: in recovery mode a restore fetches the next maxParallel-1 segments
// into the spool; they are then served even after the archive lost them. Rewind mode
// fetches only what was asked for.
func TestRestoreReadsAhead(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, kind, stores.WALSettings{MaxParallel: 4})
			segs := map[string][]byte{}
			for i := 1; i <= 5; i++ {
				name := fmt.Sprintf("0000000100000000000000%02X", i)
				segs[name] = segment(77)
				if err := e.archive(t, e.writeWAL(t, name, segs[name], false), nil); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := e.restore(t, seg1, wal.RestoreRecovery); err != nil || !bytes.Equal(got, segs[seg1]) {
				t.Fatalf("restore: %v", err)
			}
			e.waitSpooled(t, "000000010000000000000002", "000000010000000000000003", "000000010000000000000004")
			for _, name := range []string{"000000010000000000000002", "000000010000000000000003", "000000010000000000000004", "000000010000000000000005"} {
				e.deleteObject(t, name)
			}
			for _, name := range []string{"000000010000000000000002", "000000010000000000000003", "000000010000000000000004"} {
				got, err := e.restore(t, name, wal.RestoreRecovery)
				if err != nil || !bytes.Equal(got, segs[name]) {
					t.Fatalf("%s from the spool: %v", name, err)
				}
			}
			// 5 was read ahead by the restore of 2, 3 or 4 only if it still existed: it did not.
			if _, err := e.restore(t, "000000010000000000000005", wal.RestoreRecovery); !errors.Is(err, wal.ErrNotFound) {
				t.Fatalf("segment 5 (deleted before any read-ahead could see it): %v", err)
			}
		})
	}
}

func TestRestoreRewindFetchesOnlyOne(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{MaxParallel: 4})
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("0000000100000000000000%02X", i)
		if err := e.archive(t, e.writeWAL(t, name, segment(77), false), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.restore(t, seg1, wal.RestoreRewind); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a read-ahead, if one had started, would finish now
	e.deleteObject(t, "000000010000000000000002")
	if _, err := e.restore(t, "000000010000000000000002", wal.RestoreRewind); !errors.Is(err, wal.ErrNotFound) {
		t.Fatalf("rewind must not read ahead: %v", err)
	}
}

// TestRestoreReadsBarmanArchives: files barman-cloud wrote (bzip2 here, uncompressed
// history files at the top of wals/) are found by listing, without catalog rows.
func TestRestoreReadsBarmanArchives(t *testing.T) {
	if _, err := exec.LookPath("bzip2"); err != nil {
		t.Skip("bzip2 command not installed: the bzip2 case needs an independent compressor")
	}
	e := newEnv(t, "posix", stores.WALSettings{})
	data := segment(11)
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = bytes.NewReader(data)
	bz, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(bzip2.NewReader(bytes.NewReader(bz))); !bytes.Equal(plain, data) {
		t.Fatal("bzip2 round trip broken")
	}
	e.put(t, "pg-main/wals/0000000100000000/"+seg1+".bz2", bz)
	history := []byte("1\t0/3000000\tno recovery target specified\n")
	e.put(t, "pg-main/wals/00000002.history", history)
	if got, err := e.restore(t, seg1, wal.RestoreRecovery); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("bzip2 segment: %v", err)
	}
	if got, err := e.restore(t, "00000002.history", wal.RestoreRecovery); err != nil || !bytes.Equal(got, history) {
		t.Fatalf("history file: %q %v", got, err)
	}
}

func TestStatusAndSetFirstRequired(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	for _, name := range []string{"000000010000000000000002", "000000010000000000000003"} {
		if err := e.archive(t, e.writeWAL(t, name, segment(1), false), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.svc.SetFirstRequired(ctxT(t), e.target, "000000010000000000000003"); err != nil {
		t.Fatal(err)
	}
	var inv *input.Error
	if err := e.svc.SetFirstRequired(ctxT(t), e.target, "00000002.history"); !errors.As(err, &inv) {
		t.Fatalf("a history file is not a first required segment: %v", err)
	}
	st, err := e.svc.Status(ctxT(t), e.target)
	if err != nil || st.FirstWAL != "000000010000000000000002" || st.LastWAL != "000000010000000000000003" ||
		st.Segments != 2 || st.FirstRequired != "000000010000000000000003" {
		t.Fatalf("status %+v %v", st, err)
	}
}

func (e *env) deleteObject(t *testing.T, name string) {
	t.Helper()
	rec, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", name)
	if err != nil || !ok {
		t.Fatalf("%s not catalogued: %v", name, err)
	}
	if err := e.target.Store.Store.Delete(ctxT(t), rec.Key); err != nil {
		t.Fatal(err)
	}
}
