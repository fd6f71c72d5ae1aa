package pglocal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// TestAnotherLocalUserCannotConnect is issue #36's attack on a private cluster: another
// account on the machine (nobody) runs psql against 127.0.0.1 as postgres. With trust auth it
// read and changed every service's tables; it must be refused for want of a password.
func TestAnotherLocalUserCannotConnect(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(baseDir(t), "data"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	requireRefused(t, ctx, c.Port())
	asNobody(t, "psql", "-h", "127.0.0.1", "-p", fmt.Sprint(c.Port()), "-U", "postgres", "-d", "postgres", "-w",
		"-tAc", "SELECT count(*) FROM pg_authid")
}

// requireRefused connects to port as postgres without a password: it must fail
// authentication (SQLSTATE 28P01), not merely fail.
func requireRefused(t *testing.T, ctx context.Context, port int) {
	t.Helper()
	for _, user := range []string{"postgres", "plinth", "nobody"} {
		// passfile: neither this user's ~/.pgpass nor PGPASSFILE may lend a password.
		url := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&passfile=/nonexistent", user, port)
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_ = conn.Close(ctx)
			t.Fatalf("connected to 127.0.0.1:%d as %s without a password", port, user)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || !strings.HasPrefix(pgErr.Code, "28") {
			t.Fatalf("as %s without a password: %v; want an authentication failure (28xxx)", user, err)
		}
	}
}

// asNobody runs a command as the unprivileged user nobody (tests run as root in CI) and
// requires it to fail: what another local account can do, it must not be able to.
func asNobody(t *testing.T, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Logf("not root: cannot become nobody to run %q", args)
		return
	}
	if _, err := osexec.LookPath(args[0]); err != nil {
		t.Logf("%s not installed: skipping %q as nobody", args[0], args)
		return
	}
	cmd := osexec.Command("runuser", append([]string{"-u", "nobody", "--", "env", "-i", "PATH=/usr/bin:/bin", "PGCONNECT_TIMEOUT=5"}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("as nobody, %q succeeded: %s", args, out)
	}
	t.Logf("as nobody, %q refused: %s", args, strings.TrimSpace(string(out)))
}
