package wal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// privatePostgres is a PostgreSQL server of the test's own, which it can stop and start
// again (same data, same port): the catalog database going away and coming back.
type privatePostgres struct {
	t   *testing.T
	dir string
	pg  *pglocal.Cluster
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	// The postgres user must traverse it when tests run as root (t.TempDir's parent is 0700).
	dir, err := os.MkdirTemp("", "cnpgi-catalog-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	p := &privatePostgres{t: t, dir: dir}
	p.start(0)
	t.Cleanup(func() { _ = p.pg.Stop(context.Background()) })
	return p
}

func (p *privatePostgres) start(port int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(p.dir, "data"), Port: port, NoSync: true})
	if err != nil {
		p.t.Fatal(err)
	}
	p.pg = pg
}

func (p *privatePostgres) stop() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.pg.Stop(ctx); err != nil {
		p.t.Fatal(err)
	}
}

// syncBuffer collects a logger's output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestArchivingGoesOnWithoutTheCatalog stops the catalog's PostgreSQL under the plugin: every
// archive and restore call still succeeds from the object store alone (idempotence and
// "never overwrite" included), Status says the catalog is behind, and once the database is
// back the catalog holds every file archived meanwhile, with the time it was archived.
func TestArchivingGoesOnWithoutTheCatalog(t *testing.T) {
	// What the catalog's outage changes is the same for every store (the store path is
	// storeKinds' in every other test): a file store and an object store are enough, and
	// each run costs a PostgreSQL of its own.
	for _, kind := range []string{"posix", "s3"} {
		t.Run(kind, func(t *testing.T) {
			pg := startPrivatePostgres(t)
			var logs syncBuffer
			e := newEnvOn(t, pg.pg.URL("postgres"), kind, stores.WALSettings{},
				wal.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			e.setSystemID(t, 7001)
			names := []string{
				"000000010000000000000001", "000000010000000000000002", "000000010000000000000003",
				"000000010000000000000004", "000000010000000000000005",
			}
			sums := map[string][32]byte{}
			archive := func(name string, data []byte) error {
				p := e.writeWAL(t, name, data, false)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				sums[name] = sha256.Sum256(b)
				return e.archive(t, p, nil)
			}
			if err := archive(names[0], segment(7001)); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", names[0]); err != nil || !ok {
				t.Fatalf("catalog before the outage: %v %v", ok, err)
			}

			pg.stop()
			down := time.Now()
			for _, n := range names[1:] {
				if err := archive(n, segment(7001)); err != nil {
					t.Fatalf("archive %s while the catalog is down: %v", n, err)
				}
			}
			// Idempotent and never overwriting, with no catalog to ask.
			if err := e.archive(t, filepath.Join(e.pgdata, "pg_wal", names[2]), nil); err != nil {
				t.Errorf("archiving the same bytes again while the catalog is down: %v", err)
			}
			other := segment(7001)
			var conflict *wal.ConflictError
			p := e.writeWAL(t, names[3], other, false)
			if err := e.archive(t, p, nil); !errors.As(err, &conflict) {
				t.Errorf("other bytes under an archived name while the catalog is down: %v, want a ConflictError", err)
			}
			got, err := e.restore(t, names[4], wal.RestoreRecovery)
			if err != nil {
				t.Fatalf("restore while the catalog is down: %v", err)
			}
			if sha256.Sum256(got) != sums[names[4]] {
				t.Error("restored bytes differ from the archived ones")
			}
			st, err := e.svc.Status(ctxT(t), e.target)
			if err != nil {
				t.Fatalf("Status while the catalog is down: %v", err)
			}
			if st.CatalogKnown || st.CatalogWaiting != len(names)-1 || st.Segments != int64(len(names)) || st.LastWAL != names[4] {
				t.Errorf("Status while the catalog is down: %+v; want the store's 5 segments, 4 waiting, catalog unknown", st)
			}

			pg.start(pg.pg.Port())
			deadline := time.Now().Add(90 * time.Second)
			for {
				st, err = e.svc.Status(ctxT(t), e.target)
				if err == nil && st.CatalogKnown && st.CatalogWaiting == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the catalog did not catch up: %+v %v", st, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if st.CatalogSegments != int64(len(names)) {
				t.Errorf("catalog segments after the outage: %d, want %d", st.CatalogSegments, len(names))
			}
			for _, n := range names {
				rec, ok, err := e.catalog.File(ctxT(t), "main", "pg-main", n)
				switch {
				case err != nil || !ok:
					t.Errorf("%s not in the catalog after the outage: %v", n, err)
				case rec.SHA256 != sums[n]:
					t.Errorf("%s: the catalog's hash is not the archived bytes'", n)
				case n != names[0] && (rec.ArchivedAt.Before(down) || rec.ArchivedAt.After(time.Now())):
					t.Errorf("%s: archived at %s, not during the outage", n, rec.ArchivedAt)
				case rec.SystemID != 7001:
					t.Errorf("%s: system %d", n, rec.SystemID)
				}
			}
			out := logs.String()
			for _, want := range []string{"the catalog database does not answer", "the catalog answers again"} {
				if !strings.Contains(out, want) {
					t.Errorf("logs lack %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestEmptyArchiveCheckWithoutTheCatalog: check_empty_wal_archive decides from the segments'
// headers in the store when the catalog cannot say: another system's WAL is refused, the
// same system's (e.g. archived while the catalog was down) passes.
func TestEmptyArchiveCheckWithoutTheCatalog(t *testing.T) {
	pg := startPrivatePostgres(t)
	e := newEnvOn(t, pg.pg.URL("postgres"), "posix", stores.WALSettings{}, wal.Options{})
	e.setSystemID(t, 7001)
	pg.stop()
	seg1, seg2 := "000000010000000000000001", "000000010000000000000002"
	e.put(t, "pg-main/wals/0000000100000000/"+seg1+".gz", gzipped(t, addressed(seg1, segment(9009))))
	var notEmpty *wal.NotEmptyError
	if err := e.archive(t, e.writeWAL(t, seg2, segment(7001), false), ptr(true)); !errors.As(err, &notEmpty) {
		t.Fatalf("another system's WAL in the archive, catalog down: %v, want a NotEmptyError", err)
	}
	if err := e.target.Store.Store.Delete(ctxT(t), "pg-main/wals/0000000100000000/"+seg1+".gz"); err != nil {
		t.Fatal(err)
	}
	e.put(t, "pg-main/wals/0000000100000000/"+seg1+".gz", gzipped(t, addressed(seg1, segment(7001))))
	if err := e.archive(t, e.writeWAL(t, seg2, segment(7001), false), ptr(true)); err != nil {
		t.Fatalf("the same system's WAL in the archive, catalog down: %v", err)
	}
}

// gzipped is data as barman-cloud-wal-archive stores it by default.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return gz.Bytes()
}
