package backup_test

import (
	"context"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// instance is a real PostgreSQL 15 archiving its WAL, in barman's layout, into a POSIX
// store ("archive", server "pg") with a shell archive_command, so that pg_backup_stop can
// wait for archiving; plus a user tablespace and an unlogged table.
type instance struct {
	pg      *pglocal.Cluster
	home    string
	pgdata  string
	archive *stores.Named
	tbsDir  string
	svc     *backup.Service
	catalog *catalog.Catalog
	pool    *pgxpool.Pool // the catalog\'s: tests read its outbox
}

func startInstance(t *testing.T) *instance {
	t.Helper()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx := ctxT(t)
	home, err := os.MkdirTemp("", "cnpgi-backup-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	in := &instance{home: home, pgdata: filepath.Join(home, "pgdata"), tbsDir: filepath.Join(home, "tbs")}
	archiveRoot := filepath.Join(home, "archive")
	// The archiver (postgres) and the backups (this process) share the server's directory.
	for _, d := range []string{archiveRoot, filepath.Join(archiveRoot, "pg"), filepath.Join(archiveRoot, "pg", "wals"), in.tbsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		chownPostgres(t, d)
	}
	opts := pglocal.Options{DataDir: in.pgdata, NoSync: true}
	if in.pg, err = pglocal.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	// barman's layout: wals/<timeline+log>/<segment>.gz, written atomically.
	archiveCmd := fmt.Sprintf(`d=%s/pg/wals/$(echo %%f | cut -c1-16); mkdir -p $d && gzip -1 -c %%p > $d/%%f.gz.tmp && mv $d/%%f.gz.tmp $d/%%f.gz`, archiveRoot)
	in.exec(t, "ALTER SYSTEM SET archive_mode = 'on'", "ALTER SYSTEM SET archive_command = '"+archiveCmd+"'")
	if err := in.pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if in.pg, err = pglocal.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(in.pgdata, "postgres.log"))
			t.Logf("postgres.log:\n%s", log[max(0, len(log)-4000):])
		}
		_ = in.pg.Stop(context.Background())
	})
	in.exec(t,
		"CREATE TABLESPACE tbs LOCATION '"+in.tbsDir+"'",
		"CREATE TABLE t (x int) TABLESPACE tbs", "INSERT INTO t SELECT generate_series(1, 1000)",
		"CREATE UNLOGGED TABLE u (x int)", "INSERT INTO u SELECT generate_series(1, 1000)")
	st, err := objectstore.NewPOSIX(archiveRoot, true)
	if err != nil {
		t.Fatal(err)
	}
	in.archive = &stores.Named{Name: "archive", Kind: "posix", Store: st}
	cat, pool, err := catalog.Open(ctx, testenv.DB(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	in.catalog, in.pool = cat, pool
	in.svc = backup.NewService(cat, backup.Options{InstanceURL: in.pg.URL("postgres"), Logger: slog.New(slog.DiscardHandler)})
	return in
}

func (in *instance) exec(t *testing.T, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), in.pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctxT(t), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func (in *instance) query(t *testing.T, sql string, dst ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), in.pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctxT(t), sql).Scan(dst...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// s3Store is a store in a fresh bucket of a real versitygw.
func s3Store(t *testing.T, name string) (*stores.Named, *s3test.Server, string) {
	t.Helper()
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	st, err := objectstore.NewS3(objectstore.S3Options{
		Endpoint: srv.Endpoint, Bucket: bucket, Prefix: "plinth", PathStyle: true,
		AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &stores.Named{Name: name, Kind: "s3", Store: st}, srv, bucket
}

func chownPostgres(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
