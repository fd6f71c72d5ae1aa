package pglocal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// baseDir returns a temp directory the postgres user can traverse when tests run as
// root (t.TempDir's parent is 0700).
func baseDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pglocal-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestFindBinaries(t *testing.T) {
	requireBinaries(t)
	dir, err := pglocal.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s missing in %s: %v", name, dir, err)
		}
	}
}

func TestStartRestartKeepsData(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	dataDir := filepath.Join(baseDir(t), "data")

	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	if c.Port() <= 0 || c.Port() >= 32768 {
		t.Fatalf("port %d not in 1..32767", c.Port())
	}
	exec(t, ctx, c.URL("postgres"), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	port := c.Port()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.URL("postgres")); err == nil {
		t.Fatal("connected after Stop")
	}

	c2, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	if c2.Port() != port {
		t.Fatalf("port %d, want %d", c2.Port(), port)
	}
	conn, err := pgx.Connect(ctx, c2.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v, enc string
	if err := conn.QueryRow(ctx, "SELECT v, pg_encoding_to_char(encoding) FROM kept, pg_database WHERE datname = 'postgres'").Scan(&v, &enc); err != nil {
		t.Fatal(err)
	}
	if v != "hello" || enc != "UTF8" {
		t.Fatalf("got %q %q, want hello UTF8", v, enc)
	}
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if fsync != "on" {
		t.Fatalf("fsync = %s after a restart without NoSync, want on", fsync)
	}
}

func TestLongDataDirUsesShortSocketDir(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	long := filepath.Join(baseDir(t), strings.Repeat("d", 60), strings.Repeat("e", 60), "data")
	if err := os.MkdirAll(filepath.Dir(long), 0o711); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(long); strings.Contains(p, "pglocal-test-"); p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: long, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	var dirs string
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SHOW unix_socket_directories").Scan(&dirs); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(dirs, long) || len(dirs) > 90 {
		t.Fatalf("socket dir %q should be a short temp dir", dirs)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s not removed at Stop: %v", dirs, err)
	}
}

func TestStartRejectsNonEmptyNonCluster(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	dataDir := filepath.Join(baseDir(t), "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "stray"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir})
	if err == nil || !strings.Contains(err.Error(), "must be empty") {
		t.Fatalf("err = %v, want an initdb error explaining the directory must be empty", err)
	}
}

func TestStopDataDirStopsLeftover(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	dataDir := filepath.Join(baseDir(t), "data")
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	if err := pglocal.StopDataDir(ctx, dataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still present: %v", err)
	}
	if err := pglocal.StopDataDir(ctx, dataDir); err != nil {
		t.Fatalf("second StopDataDir on a stopped cluster: %v", err)
	}
}

func exec(t *testing.T, ctx context.Context, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func TestRootNeedsSearchableParents(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	if os.Geteuid() != 0 {
		t.Skip("only root hands the data directory to the postgres user")
	}
	// t.TempDir's parent is 0700 root: the postgres user cannot get in.
	_, err := pglocal.Start(ctxT(t), pglocal.Options{DataDir: filepath.Join(t.TempDir(), "data")})
	if err == nil || !strings.Contains(err.Error(), "searchable") {
		t.Fatalf("err = %v, want an explanation that parents must be searchable", err)
	}
}

func TestStartTakesOverLeftoverPostmaster(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	dataDir := filepath.Join(baseDir(t), "data")
	old, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Stop(context.Background()) })
	// As if the owner of old had crashed: start again without Stop.
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	exec(t, ctx, c.URL("postgres"), "SELECT 1")
	if old.Port() != c.Port() {
		if conn, err := pgx.Connect(ctx, old.URL("postgres")); err == nil {
			_ = conn.Close(ctx)
			t.Fatal("the leftover postmaster still serves its old port")
		}
	}
}

// TestStopLeavesNoPostmaster: Stop returns once the postmaster has exited, not merely once
// its pid file is gone, and a caller whose budget has already run out (a launcher told to
// stop twice) still leaves no postmaster behind: Stop ends it in immediate mode.
func TestStopLeavesNoPostmaster(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	for _, budget := range []string{"enough", "spent"} {
		t.Run(budget, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			dataDir := filepath.Join(baseDir(t), "data")
			c, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pglocal.StopDataDir(context.Background(), dataDir) })
			data, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]))
			if err != nil {
				t.Fatal(err)
			}
			stopCtx := ctx
			if budget == "spent" {
				spent, cancel := context.WithCancel(ctx)
				cancel()
				stopCtx = spent
			}
			if err := c.Stop(stopCtx); err != nil {
				t.Fatal(err)
			}
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(stat), ") Z ") {
				t.Fatalf("postmaster %d still runs after Stop returned: %s", pid, stat)
			}
		})
	}
}
