package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestPrivatePostgresAdmitsOnlyTheServicesRole is issue #36's attack on make up's private
// cluster: another local account (nobody) ran psql against 127.0.0.1 as postgres and read and
// changed auth.users. Now it is refused for want of a password, and the services' own URL is
// a role that is not a superuser.
func TestPrivatePostgresAdmitsOnlyTheServicesRole(t *testing.T) {
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home, err := os.MkdirTemp("", "launcher-pg-") // the postgres user must traverse it when we are root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.Chmod(home, 0o711); err != nil {
		t.Fatal(err)
	}
	c := Config{Home: home, DatabaseName: defaultDatabaseName, PrivatePostgres: true}
	db, err := openDatabase(ctx, c, t.Logf, slog.New(slog.DiscardHandler), machine{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.stop(context.Background()) })
	u, err := url.Parse(db.url)
	if err != nil {
		t.Fatal(err)
	}
	requireServiceRole(t, ctx, db.url, defaultDatabaseName)
	for _, user := range []string{"postgres", defaultDatabaseName} {
		noPassword := fmt.Sprintf("postgres://%s@%s/postgres?sslmode=disable&passfile=/nonexistent", user, u.Host)
		conn, err := pgx.Connect(ctx, noPassword)
		var pgErr *pgconn.PgError
		if err == nil {
			_ = conn.Close(ctx)
			t.Fatalf("connected to the private cluster as %s without a password", user)
		} else if !errors.As(err, &pgErr) || !strings.HasPrefix(pgErr.Code, "28") {
			t.Fatalf("as %s without a password: %v; want an authentication failure", user, err)
		}
		failsAsNobody(t, "psql", "-h", "127.0.0.1", "-p", u.Port(), "-U", user, "-d", defaultDatabaseName, "-w", "-tAc", "SELECT 1")
	}
	failsAsNobody(t, "cat", u.Query().Get("passfile"))
}

// requireServiceRole connects with dbURL, which must name no password, as role: not a
// superuser, unable to make roles or databases or to read pg_authid, yet able to make the
// schema a service migrates.
func requireServiceRole(t *testing.T, ctx context.Context, dbURL, role string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.User.Password(); has || u.User.Username() != role {
		t.Fatalf("services' URL %s: want role %s and no password in it", u.Redacted(), role)
	}
	passFile := u.Query().Get("passfile")
	if fi, err := os.Stat(passFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("services' pass file %q: %v; want one of mode 0600", passFile, err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var user string
	var super, createRole, createDB bool
	if err := conn.QueryRow(ctx, "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").
		Scan(&user, &super, &createRole, &createDB); err != nil {
		t.Fatal(err)
	}
	if user != role || super || createRole || createDB {
		t.Fatalf("services connect as %s: superuser %v, createrole %v, createdb %v; want %s with none", user, super, createRole, createDB, role)
	}
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_authid").Scan(&n)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("services' role reading pg_authid: %v; want permission denied", err)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS launcher_test_svc; CREATE TABLE IF NOT EXISTS launcher_test_svc.t (v int)"); err != nil {
		t.Fatalf("services' role cannot make its schema: %v", err)
	}
}

// failsAsNobody runs a command as the unprivileged user nobody and requires it to fail.
func failsAsNobody(t *testing.T, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Logf("not root: cannot become nobody to run %q", args)
		return
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Logf("%s not installed: skipping %q as nobody", args[0], args)
		return
	}
	cmd := exec.Command("runuser", append([]string{"-u", "nobody", "--", "env", "-i", "PATH=/usr/bin:/bin", "PGCONNECT_TIMEOUT=5"}, args...)...)
	cmd.Dir = filepath.Dir("/")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("as nobody, %q succeeded: %s", args, out)
	}
	t.Logf("as nobody, %q refused: %s", args, strings.TrimSpace(string(out)))
}
