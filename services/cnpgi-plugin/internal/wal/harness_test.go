package wal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/azuritetest"
	"github.com/plinth-dev/plinth/libs/storage/gcstest"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/azureblob"
	"github.com/plinth-dev/plinth/libs/storage/objectstore/gcs"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal/waltest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is one WAL service over a real catalog schema and one store.
type env struct {
	svc     *wal.Service
	catalog *catalog.Catalog
	target  wal.Target
	pgdata  string // a fake PGDATA with pg_wal/archive_status
	spool   string
}

// storeKinds are the stores every WAL test runs against.
var storeKinds = []string{"posix", "s3", "gcs", "azure"}

func newEnv(t *testing.T, kind string, settings stores.WALSettings) *env {
	t.Helper()
	return newEnvWith(t, kind, settings, wal.Options{})
}

// newEnvWith is newEnv with service options (the spool and logger are set here).
func newEnvWith(t *testing.T, kind string, settings stores.WALSettings, o wal.Options) *env {
	t.Helper()
	return newEnvOn(t, testenv.DB(t).URL, kind, settings, o)
}

// newEnvOn is newEnvWith with the catalog in the database at databaseURL.
func newEnvOn(t *testing.T, databaseURL, kind string, settings stores.WALSettings, o wal.Options) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, pool, err := catalog.Open(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var st objectstore.Store
	switch kind {
	case "posix":
		st, err = objectstore.NewPOSIX(filepath.Join(t.TempDir(), "archive"), true)
	case "azure": // Azurite, the emulator barman-cloud's CI uses
		srv := azuritetest.Start(t)
		st, err = azureblob.New(azureblob.Options{ConnectionString: srv.ConnectionString(), Container: srv.Container(t),
			Prefix: "plinth", BlockSize: azureblob.MinBlockSize})
	case "gcs": // fake-gcs-server, the emulator barman-cloud's CI uses
		srv := gcstest.Start(t)
		st, err = gcs.New(ctx, gcs.Options{Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), Prefix: "plinth", ChunkSize: 1 << 20})
	case "s3":
		srv := s3test.Start(t)
		st, err = objectstore.NewS3(objectstore.S3Options{
			Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), Prefix: "plinth", PathStyle: true,
			AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey,
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if settings.Compression == "" {
		settings.Compression = "gzip"
	}
	if settings.MaxParallel == 0 {
		settings.MaxParallel = 1
	}
	spool := filepath.Join(t.TempDir(), "spool")
	o.SpoolDir = spool
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	svc, err := wal.NewService(cat, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	pgdata := t.TempDir()
	for _, d := range []string{"pg_wal/archive_status", "global"} {
		if err := os.MkdirAll(filepath.Join(pgdata, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return &env{
		svc: svc, catalog: cat, pgdata: pgdata, spool: spool,
		target: wal.Target{Store: &stores.Named{Name: "main", Kind: kind, Store: st, WAL: settings}, Server: "pg-main"},
	}
}

// segSize keeps the tests fast; 1 MiB is a valid wal_segment_size.
const segSize = waltest.Size

// segment returns segment bytes with a long page header carrying sysID, then random data;
// writeWAL sets the page address once the name is known.
func segment(sysID uint64) []byte { return waltest.Segment("", sysID) }

// addressed sets a segment's page address, in place, to the one its name says.
func addressed(name string, data []byte) []byte { return waltest.Address(name, data) }

// setSystemID writes the fake PGDATA's global/pg_control, whose first field is the system
// identifier.
func (e *env) setSystemID(t *testing.T, sysID uint64) {
	t.Helper()
	b := make([]byte, 8192)
	binary.LittleEndian.PutUint64(b, sysID)
	if err := os.WriteFile(filepath.Join(e.pgdata, "global", "pg_control"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeWAL puts a file into the fake pg_wal, optionally marked .ready, and returns its path.
// Segments get the page address of their name.
func (e *env) writeWAL(t *testing.T, name string, data []byte, ready bool) string {
	t.Helper()
	data = addressed(name, data)
	p := filepath.Join(e.pgdata, "pg_wal", name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if ready {
		if err := os.WriteFile(filepath.Join(e.pgdata, "pg_wal", "archive_status", name+".ready"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (e *env) archive(t *testing.T, path string, check *bool) error {
	t.Helper()
	return e.svc.Archive(ctxT(t), e.target, wal.ArchiveRequest{SourcePath: path, DataDirs: []string{e.pgdata}, CheckEmpty: check})
}

// restore fetches name into pg_wal/RECOVERYXLOG (as PostgreSQL asks) and returns its bytes.
func (e *env) restore(t *testing.T, name string, mode wal.RestoreMode) ([]byte, error) {
	t.Helper()
	dest := filepath.Join(e.pgdata, "pg_wal", "RECOVERYXLOG")
	_ = os.Remove(dest)
	if err := e.svc.Restore(ctxT(t), e.target, wal.RestoreRequest{Name: name, Destination: dest, DataDirs: []string{e.pgdata}, Mode: mode}); err != nil {
		if _, statErr := os.Stat(dest); statErr == nil {
			t.Errorf("failed restore of %s left %s behind", name, dest)
		}
		return nil, err
	}
	return os.ReadFile(dest)
}

// object reads a stored object's raw bytes.
func (e *env) object(t *testing.T, key string) []byte {
	t.Helper()
	r, _, err := e.target.Store.Store.Get(ctxT(t), key)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if err := e.target.Store.Store.Put(ctxT(t), key, bytes.NewReader(data), objectstore.PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
}

// waitSpooled waits until the read-ahead of names finished: each lands in the spool
// (<spool>/<store>/<server>/<name>) by an atomic rename.
func (e *env) waitSpooled(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range names {
		for {
			if _, err := os.Stat(filepath.Join(e.spool, "main", "pg-main", n)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s was not read ahead", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }
