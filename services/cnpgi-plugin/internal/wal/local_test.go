package wal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// localError asserts err is a *wal.LocalError on field, invalid or not, whose public
// message contains want.
func localError(t *testing.T, what string, err error, field string, invalid bool, want string) {
	t.Helper()
	var le *wal.LocalError
	if !errors.As(err, &le) {
		t.Errorf("%s: %v, want a LocalError", what, err)
		return
	}
	if le.Field != field || le.Invalid != invalid || !strings.Contains(le.Public(), want) {
		t.Errorf("%s: %s (invalid=%v), want field %s invalid=%v and %q", what, le.Public(), le.Invalid, field, invalid, want)
	}
	if strings.Contains(le.Public(), "PostgreSQL user and the disk has room") {
		t.Errorf("%s: the old catch-all message: %s", what, le.Public())
	}
}

// TestPathsAreConfinedToPGDATA (issue #14, defect 7): archive sources and restore
// destinations outside PGDATA, after resolving symbolic links, are refused; a segment-named
// link to /etc/passwd used to be archived (and could be restored anywhere). pg_wal on its
// own volume (a link, as CloudNativePG's walStorage makes it) is inside.
func TestPathsAreConfinedToPGDATA(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	link := filepath.Join(e.pgdata, "pg_wal", seg1)
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	localError(t, "link to /etc/passwd", e.archive(t, link, nil), "source_file_name", true, "symbolic link to a file outside PGDATA")
	outside := filepath.Join(t.TempDir(), "pg_wal", "000000010000000000000002")
	if err := os.MkdirAll(filepath.Dir(outside), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, addressed("000000010000000000000002", segment(1)), 0o600); err != nil {
		t.Fatal(err)
	}
	localError(t, "source outside", e.archive(t, outside, nil), "source_file_name", true, "outside PGDATA")
	localError(t, "dot-dot", e.archive(t, filepath.Join(e.pgdata, "..", filepath.Base(filepath.Dir(filepath.Dir(outside))), "pg_wal", "000000010000000000000002"), nil),
		"source_file_name", true, "")
	if keys := e.keys(t); len(keys) != 0 {
		t.Fatalf("refused sources reached the archive: %v", keys)
	}

	data := segment(1)
	if err := e.archive(t, e.writeWAL(t, "000000010000000000000003", data, false), nil); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{"/etc/cnpgi-test-RECOVERYXLOG", filepath.Join(t.TempDir(), "RECOVERYXLOG"), "../outside"} {
		err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: "000000010000000000000003", Destination: dest, DataDirs: []string{e.pgdata}})
		localError(t, "destination "+dest, err, "destination_file_name", true, "outside PGDATA")
	}
	if _, err := os.Stat("/etc/cnpgi-test-RECOVERYXLOG"); err == nil {
		t.Fatal("a file was written outside PGDATA")
	}

	// pg_wal on another volume, linked from PGDATA.
	moved := newEnv(t, "posix", stores.WALSettings{})
	walVolume := filepath.Join(t.TempDir(), "wal")
	if err := os.Rename(filepath.Join(moved.pgdata, "pg_wal"), walVolume); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(walVolume, filepath.Join(moved.pgdata, "pg_wal")); err != nil {
		t.Fatal(err)
	}
	if err := moved.archive(t, moved.writeWAL(t, seg1, segment(2), false), nil); err != nil {
		t.Fatalf("pg_wal linked to a WAL volume: %v", err)
	}
	if _, err := moved.restore(t, seg1, wal.RestoreRewind); err != nil {
		t.Fatalf("restore into a linked pg_wal: %v", err)
	}
	if err := moved.archive(t, "pg_wal/"+seg1, nil); err != nil {
		t.Fatalf("a path relative to PGDATA: %v", err)
	}
}

// TestNonWALFilesAreRefused: a file named like a segment that is not one (wrong size, no
// page header, another segment's header) is refused with the reason.
func TestNonWALFilesAreRefused(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	wrongAddress := segment(1)
	addressed("000000010000000000000009", wrongAddress)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"short":          {[]byte("root:x:0:0:root:/root:/bin/bash\n"), "not a WAL segment (a power of two"},
		"no header":      {make([]byte, segSize), "no WAL page header"},
		"other segment":  {wrongAddress, "not for segment 000000010000000000000001"},
		"17 MiB of text": {[]byte(strings.Repeat("x", 17<<20)), "not a WAL segment"},
	}
	for name, c := range cases {
		p := filepath.Join(e.pgdata, "pg_wal", seg1)
		if err := os.WriteFile(p, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		localError(t, name, e.archive(t, p, nil), "source_file_name", true, c.want)
	}
	if keys := e.keys(t); len(keys) != 0 {
		t.Fatalf("refused files reached the archive: %v", keys)
	}
}

// TestLocalErrorsSayWhatIsWrong (issue #14, defect 6): a directory as source, a directory
// or a missing directory as destination and an over-long name each get their own message,
// not "check that it runs as the PostgreSQL user and the disk has room".
func TestLocalErrorsSayWhatIsWrong(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	dir := filepath.Join(e.pgdata, "pg_wal", seg1)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	localError(t, "directory source", e.archive(t, dir, nil), "source_file_name", true, "is a directory")
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	localError(t, "missing source", e.archive(t, dir, nil), "source_file_name", false, "does not exist")
	if err := e.archive(t, e.writeWAL(t, seg1, segment(1), false), nil); err != nil {
		t.Fatal(err)
	}
	restore := func(dest string) error {
		return e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: seg1, Destination: dest, DataDirs: []string{e.pgdata}})
	}
	localError(t, "directory destination", restore(filepath.Join(e.pgdata, "pg_wal")), "destination_file_name", true, "is a directory")
	localError(t, "missing directory", restore(filepath.Join(e.pgdata, "no-such-dir", "RECOVERYXLOG")), "destination_file_name", false, "its directory does not exist")
	localError(t, "long name", restore(filepath.Join(e.pgdata, strings.Repeat("n", 250))), "destination_file_name", true, "file name is 250 bytes long")
	var inv *input.Error
	if err := restore(strings.Repeat("/x", 3000)); !errors.As(err, &inv) || len(err.Error()) > 200 {
		t.Errorf("a 6000-byte path: %.300v", err)
	}
	if err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: seg1, Destination: "pg_wal/X"}); err == nil ||
		!strings.Contains(err.Error(), "PLINTH_CNPGI_PGDATA") {
		t.Errorf("no PGDATA configured: %v", err)
	}
}

// TestErrorsQuoteAShortPrefix (issue #14, defect 5): a 1 MiB source_file_name comes back as
// a short error, not a 1 MiB one.
func TestErrorsQuoteAShortPrefix(t *testing.T) {
	e := newEnv(t, "posix", stores.WALSettings{})
	for _, p := range []string{
		filepath.Join(e.pgdata, "pg_wal", strings.Repeat("A", 1<<20)),
		filepath.Join(e.pgdata, strings.Repeat("d/", 1<<19), seg1),
		"pg_wal/" + seg1 + "\x00",
	} {
		err := e.archive(t, p, nil)
		if err == nil || len(err.Error()) > 300 {
			t.Errorf("a %d-byte path: error of %d bytes: %.300v", len(p), len(err.Error()), err)
		}
	}
	err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: strings.Repeat("0", 1<<20), Destination: "pg_wal/X", DataDirs: []string{e.pgdata}})
	if err == nil || len(err.Error()) > 300 {
		t.Errorf("a 1 MiB WAL name: %.300v", err)
	}
}
