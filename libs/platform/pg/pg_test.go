package pg_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pg"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// twoMigrations counts how often 001 runs: the runs table would hold two rows if two
// starts both applied it.
func twoMigrations() fstest.MapFS {
	return fstest.MapFS{
		"migrations/001_create_runs.up.sql":  {Data: []byte("CREATE TABLE runs (n int);\nINSERT INTO runs VALUES (1);")},
		"migrations/002_create_items.up.sql": {Data: []byte("CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL);")},
		"migrations/README.md":               {Data: []byte("not a migration")},
	}
}

func TestOpenConcurrentStartsApplyOnce(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)

	const starts = 5
	var wg sync.WaitGroup
	errs := make(chan error, starts)
	for range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pg.Open(ctx, db.URL, "unused_default", twoMigrations())
			if err != nil {
				errs <- err
				return
			}
			pool.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Open: %v", err)
	}
	var runs, recorded int
	if err := db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM schema_migrations WHERE source = 'service')").Scan(&runs, &recorded); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || recorded != 2 {
		t.Fatalf("migration 001 ran %d times, %d migrations recorded; want 1 and 2", runs, recorded)
	}
}

func TestOpenSetsSearchPathToSchema(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	// The schema argument applies when the URL carries no search_path.
	base := stripSearchPath(t, db.URL)
	pool, err := pg.Open(ctx, base, db.Schema, twoMigrations())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var current string
	if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != db.Schema {
		t.Fatalf("current_schema() = %q, want %q", current, db.Schema)
	}
	// Unqualified names resolve in the schema: the table was created there.
	var where string
	if err := pool.QueryRow(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'items' AND table_schema = $1", db.Schema).Scan(&where); err != nil {
		t.Fatalf("items not created in %s: %v", db.Schema, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, "x", twoMigrations())
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()

	older := twoMigrations()
	delete(older, "migrations/002_create_items.up.sql")
	_, err = pg.Open(ctx, db.URL, "x", older)
	if !errors.Is(err, pg.ErrSchemaTooNew) {
		t.Fatalf("err = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "002_create_items") {
		t.Fatalf("error should name the unknown migration: %v", err)
	}
}

// TestOpenRenamedMigrationRunsNothing: an applied migration is known by its number and
// checksum, so renaming its file (the body unchanged) neither re-runs it nor refuses.
func TestOpenRenamedMigrationRunsNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, "x", twoMigrations())
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()

	renamed := twoMigrations()
	renamed["migrations/001_create_run_counter.up.sql"] = renamed["migrations/001_create_runs.up.sql"]
	delete(renamed, "migrations/001_create_runs.up.sql")
	pool, err = pg.Open(ctx, db.URL, "x", renamed)
	if err != nil {
		t.Fatalf("Open after a rename: %v", err)
	}
	pool.Close()
	var runs int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM runs").Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Fatalf("migration 001 ran %d times, want 1", runs)
	}
}

func TestOpenRejectsEditedMigration(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	pool, err := pg.Open(ctx, db.URL, "x", twoMigrations())
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()

	edited := twoMigrations()
	edited["migrations/002_create_items.up.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE items (id bigint PRIMARY KEY);")}
	edited["migrations/003_add_more.up.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE more (id int);")}
	_, err = pg.Open(ctx, db.URL, "x", edited)
	if !errors.Is(err, pg.ErrMigrationEdited) {
		t.Fatalf("err = %v, want ErrMigrationEdited", err)
	}
	// The refusal applied nothing: 003 is not there.
	var exists bool
	if err := db.Pool.QueryRow(ctx, "SELECT to_regclass('more') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatal("migration 003 applied although 002 was rejected")
	}
}

func TestOpenAppliesNewMigrationsAndExtraSets(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	lib := pg.MigrationSet{Source: "lib", FS: fstest.MapFS{"001_lib_table.up.sql": {Data: []byte("CREATE TABLE lib_table (id int)")}}}
	pool, err := pg.Open(ctx, db.URL, "x", twoMigrations(), lib)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()

	grown := twoMigrations()
	grown["migrations/003_add_column.up.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE items ADD COLUMN note text;")}
	pool, err = pg.Open(ctx, db.URL, "x", grown, lib)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, "SELECT source || ':' || version || ':' || name FROM schema_migrations ORDER BY applied_at, source, version")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "lib:1:001_lib_table.up.sql service:1:001_create_runs.up.sql service:2:002_create_items.up.sql service:3:003_add_column.up.sql"
	if strings.Join(got, " ") != want {
		t.Fatalf("schema_migrations = %v\nwant %s", got, want)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO items (id, name, note) VALUES (1, 'a', 'b')"); err != nil {
		t.Fatalf("003 not applied: %v", err)
	}
}

func TestOpenFailedMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	bad := twoMigrations()
	bad["migrations/003_broken.up.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE ok_before (id int); SELEC broken;")}
	if _, err := pg.Open(ctx, db.URL, "x", bad); err == nil || !strings.Contains(err.Error(), "003_broken") {
		t.Fatalf("err = %v, want a failure naming 003_broken", err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", db.Schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d tables left behind by a failed migration run", n)
	}
}

func TestOpenValidation(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	base := stripSearchPath(t, db.URL)
	cases := []struct {
		name, url, schema string
		fs                fstest.MapFS
		want              string
	}{
		{"bad schema", base, "Auth-1", twoMigrations(), "schema name"},
		{"bad search_path in URL", base + "&search_path=a,b", "ok", twoMigrations(), "schema name"},
		{"misnamed file", db.URL, "x", fstest.MapFS{"001-init.sql": {Data: []byte("SELECT 1")}}, "NNN_name.up.sql"},
		{"down file", db.URL, "x", fstest.MapFS{"001_init.down.sql": {Data: []byte("SELECT 1")}}, "no down files"},
		{"gap", db.URL, "x", fstest.MapFS{"001_a.up.sql": {Data: []byte("SELECT 1")}, "003_c.up.sql": {Data: []byte("SELECT 1")}}, "version 2 missing"},
		{"duplicate", db.URL, "x", fstest.MapFS{"001_a.up.sql": {Data: []byte("SELECT 1")}, "d/001_b.up.sql": {Data: []byte("SELECT 1")}}, "used twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := pg.Open(ctx, tc.url, tc.schema, tc.fs)
			if err == nil {
				pool.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestInTx(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db := testenv.DB(t)
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	err := pg.InTx(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("err = %v, want the callback's error", err)
	}
	if err := pg.InTx(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (2)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var sum int
	if err := db.Pool.QueryRow(ctx, "SELECT coalesce(sum(v), 0) FROM t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 2 {
		t.Fatalf("sum = %d, want 2 (rolled-back insert must be gone)", sum)
	}
}

func stripSearchPath(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("search_path")
	q.Set("application_name", "pg_test") // keeps a query so callers can append &k=v
	u.RawQuery = q.Encode()
	return u.String()
}
