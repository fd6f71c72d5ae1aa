package restore_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/restore"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

type entry struct {
	name, body, link string
	dir              bool
}

func tarGz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o700, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type env struct {
	store  *stores.Named
	pgdata string
	tbs    string
	svc    *restore.Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := objectstore.NewPOSIX(filepath.Join(t.TempDir(), "store"), true)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: &stores.Named{Name: "main", Kind: "posix", Store: st}, pgdata: filepath.Join(t.TempDir(), "pgdata"), tbs: filepath.Join(t.TempDir(), "tbs")}
	e.svc = restore.NewService(restore.Options{PGData: e.pgdata, Logger: slog.New(slog.DiscardHandler),
		Command: restore.Command{Binary: "/usr/bin/cnpgi-plugin", Socket: "/plugins/p", Plugin: "p"}})
	return e
}

func (e *env) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if e.store.Encryption != nil && !strings.HasSuffix(key, "/backup.info") {
		data = sealed(t, e.store, data)
	}
	if err := e.store.Store.Put(context.Background(), key, bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
}

// addBackup stores a backup of server "pg" with a PGDATA archive (in two parts, as
// barman-cloud splits big ones) and one tablespace, and the WAL it starts in.
func (e *env) addBackup(t *testing.T, id string, end time.Time, withWAL bool) {
	t.Helper()
	info := &backup.Info{ID: id, Status: backup.StatusDone, ServerName: "pg", Timeline: 1, BeginTime: end.Add(-time.Minute), EndTime: end,
		BeginLSN: 0x2000028, EndLSN: 0x2000100, BeginWAL: "000000010000000000000002", EndWAL: "000000010000000000000002",
		Label: "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\n", SegmentSize: 16 << 20,
		Tablespaces: []backup.Tablespace{{Name: "tbs", OID: 16385, Location: e.tbs}}}
	dir := backup.Dir("pg", id)
	e.put(t, dir+"data.tar.gz", tarGz(t, entry{name: "./", dir: true}, entry{name: "PG_VERSION", body: "15\n"},
		entry{name: "base/", dir: true}, entry{name: "base/1/1259", body: id}, entry{name: "pg_wal/", dir: true}))
	e.put(t, dir+"data_0001.tar.gz", tarGz(t, entry{name: "backup_label", body: info.Label}))
	e.put(t, dir+"16385.tar.gz", tarGz(t, entry{name: "PG_15_202209061/", dir: true}, entry{name: "PG_15_202209061/5/16390", body: "rows"}))
	e.put(t, backup.InfoKey("pg", id), info.Encode())
	if withWAL {
		e.put(t, "pg/wals/0000000100000000/000000010000000000000002.gz", []byte("x"))
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRestoreUnpacksTheNewestBackup(t *testing.T) {
	e := newEnv(t)
	e.addBackup(t, "20260101T010000", time.Date(2026, 1, 1, 1, 5, 0, 0, time.UTC), true)
	e.addBackup(t, "20260101T020000", time.Date(2026, 1, 1, 2, 5, 0, 0, time.UTC), true)
	target, err := restore.ParseTarget([]byte(`{"metadata":{"name":"n"},"spec":{"bootstrap":{"recovery":{"recoveryTarget":{"targetName":"x"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: e.store, Server: "pg"}, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if res.Backup.ID != "20260101T020000" || read(t, filepath.Join(e.pgdata, "base", "1", "1259")) != "20260101T020000" {
		t.Fatalf("restored %s", res.Backup.ID)
	}
	if read(t, filepath.Join(e.pgdata, "backup_label")) != res.Backup.Label || read(t, filepath.Join(e.tbs, "PG_15_202209061", "5", "16390")) != "rows" {
		t.Fatal("the second part or the tablespace was not unpacked")
	}
	if link, err := os.Readlink(filepath.Join(e.pgdata, "pg_tblspc", "16385")); err != nil || link != e.tbs {
		t.Fatalf("tablespace link %q %v", link, err)
	}
	if _, err := os.Stat(filepath.Join(e.pgdata, "recovery.signal")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(e.pgdata); fi.Mode().Perm() != 0o700 {
		t.Fatalf("PGDATA mode %v", fi.Mode())
	}
	want := "restore_command = '/usr/bin/cnpgi-plugin wal-restore -socket=/plugins/p -plugin-name=p -object-store=main -server-name=pg %f %p'\n" +
		"recovery_target_action = 'promote'\nrecovery_target_name = 'x'\n"
	if res.Config != want || len(res.Envs) != 4 {
		t.Fatalf("config:\n%s\nenvs %q", res.Config, res.Envs)
	}

	// Again into the now full PGDATA: refused, nothing touched.
	_, err = e.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: e.store, Server: "pg"}})
	var be *backup.Error
	if !errors.As(err, &be) || be.Kind != backup.KindPrecondition || !strings.Contains(be.Msg, "not empty") {
		t.Fatalf("restore into a full PGDATA: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.pgdata, "PG_VERSION")); err != nil {
		t.Fatal("a refused restore removed files")
	}
}

func TestRestoreRefusals(t *testing.T) {
	e := newEnv(t)
	src := wal.Target{Store: e.store, Server: "pg"}
	var be *backup.Error
	if _, err := e.svc.Restore(context.Background(), restore.Request{Source: src}); !errors.As(err, &be) || be.Kind != backup.KindNotFound {
		t.Fatalf("no backup: %v", err)
	}
	e.addBackup(t, "20260101T010000", time.Now(), false)
	_, err := e.svc.Restore(context.Background(), restore.Request{Source: src})
	if !errors.As(err, &be) || be.Kind != backup.KindPrecondition || !strings.Contains(be.Msg, "lacks 000000010000000000000002") {
		t.Fatalf("backup without its WAL: %v", err)
	}
	if _, err := os.Stat(e.pgdata); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused restore created PGDATA")
	}
	// The new cluster's own archive must be empty (check_empty_wal_archive).
	e.put(t, "pg/wals/0000000100000000/000000010000000000000002.gz", []byte("x"))
	_, err = e.svc.Restore(context.Background(), restore.Request{Source: src, EmptyArchive: &src})
	var ne *wal.NotEmptyError
	if !errors.As(err, &ne) {
		t.Fatalf("restore whose own archive is not empty: %v", err)
	}
	// A corrupt archive fails the restore and leaves PGDATA empty for the next attempt.
	e.put(t, backup.Dir("pg", "20260101T010000")+"data.tar.gz", []byte("not gzip"))
	if err := os.MkdirAll(e.pgdata, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err = e.svc.Restore(context.Background(), restore.Request{Source: src}); err == nil {
		t.Fatal("corrupt archive restored")
	}
	if entries, _ := os.ReadDir(e.pgdata); len(entries) != 0 {
		t.Fatalf("a failed restore left %d entries in PGDATA", len(entries))
	}
	if entries, _ := os.ReadDir(e.tbs); len(entries) != 0 {
		t.Fatalf("a failed restore left the tablespace directory with %d entries", len(entries))
	}
}

func TestExtractRefusesEscapes(t *testing.T) {
	for _, entries := range [][]entry{
		{{name: "../evil", body: "x"}},
		{{name: "/etc/evil", body: "x"}},
		{{name: "a/../../evil", body: "x"}},
		{{name: "link", link: "/etc"}, {name: "link/evil", body: "x"}},
	} {
		e := newEnv(t)
		e.addBackup(t, "20260101T010000", time.Now(), true)
		e.put(t, backup.Dir("pg", "20260101T010000")+"data.tar.gz", tarGz(t, entries...))
		if _, err := e.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: e.store, Server: "pg"}}); err == nil ||
			!strings.Contains(err.Error(), "leaves the directory") && !strings.Contains(err.Error(), "absolute") && !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%+v: %v", entries, err)
		}
	}
}

// TestRestoreRelocatesTablespaces: a tablespace can be restored elsewhere than where the
// backup found it (barman's --tablespace NAME:LOCATION, or CloudNativePG's volume for a
// declared tablespace): the files land there, pg_tblspc links there, and tablespace_map,
// which PostgreSQL follows when recovery starts, names the new place.
func TestRestoreRelocatesTablespaces(t *testing.T) {
	e := newEnv(t)
	e.addBackup(t, "20260101T010000", time.Date(2026, 1, 1, 1, 5, 0, 0, time.UTC), true)
	dir := backup.Dir("pg", "20260101T010000")
	e.put(t, dir+"data_0002.tar.gz", tarGz(t, entry{name: "tablespace_map", body: "16385 " + e.tbs + "\n"}))
	moved := filepath.Join(t.TempDir(), "volumes", "tbs", "data")
	_, err := e.svc.Restore(context.Background(), restore.Request{Source: wal.Target{Store: e.store, Server: "pg"},
		Relocations: map[string]string{"tbs": moved, "absent": "/nowhere"}})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(moved, "PG_15_202209061", "5", "16390")) != "rows" {
		t.Fatal("the tablespace was not unpacked at its new location")
	}
	if _, err := os.Stat(e.tbs); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the original location was written: %v", err)
	}
	if link, _ := os.Readlink(filepath.Join(e.pgdata, "pg_tblspc", "16385")); link != moved {
		t.Fatalf("pg_tblspc/16385 → %q, want %q", link, moved)
	}
	if got := read(t, filepath.Join(e.pgdata, "tablespace_map")); got != "16385 "+moved+"\n" {
		t.Fatalf("tablespace_map %q", got)
	}
}
