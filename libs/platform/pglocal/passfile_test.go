package pglocal_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// TestPasswordFileIsPrivate: the cluster's own clients connect through the URL, which names
// the password file and holds no password; the file is 0600, and nobody cannot read it.
func TestPasswordFileIsPrivate(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(baseDir(t), "data"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	u, err := url.Parse(c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.User.Password(); has || u.Query().Get("passfile") != c.PasswordFile() {
		t.Fatalf("URL %s: want no password and passfile=%s", u.Redacted(), c.PasswordFile())
	}
	fi, err := os.Stat(c.PasswordFile())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v, mode %v; want 0600", err, fi.Mode())
	}
	exec(t, ctx, c.URL("postgres"), "SELECT 1")
	asNobody(t, "cat", c.PasswordFile())
	pw, err := pglocal.ReadPassFile(c.PasswordFile(), "postgres")
	if err != nil || len(pw) != 64 {
		t.Fatalf("password in the file: %d characters, %v; want 64 hex", len(pw), err)
	}
	if data, _ := os.ReadFile(filepath.Join(filepath.Dir(c.PasswordFile()), "postgres.log")); strings.Contains(string(data), pw) {
		t.Fatal("the server log holds the password")
	}
}

// TestStartClosesATrustingCluster: a cluster made by an earlier pglocal trusted every local
// connection and has no password file; Start must close it and give it a password.
func TestStartClosesATrustingCluster(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	dataDir := filepath.Join(baseDir(t), "data")
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, c.URL("postgres"), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('kept')")
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// What the earlier pglocal left: trust for everyone, no password file.
	trust := "local all all trust\nhost all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(dataDir, "pg_hba.conf"), []byte(trust), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.PasswordFile()); err != nil {
		t.Fatal(err)
	}
	c, err = pglocal.Start(ctx, pglocal.Options{DataDir: dataDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	requireRefused(t, ctx, c.Port())
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("row after closing the cluster: %q, %v", v, err)
	}
}

// TestSCRAMVerifierIsPostgresOwn: a verifier computed here is one the server accepts.
func TestSCRAMVerifierIsPostgresOwn(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := ctxT(t)
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(baseDir(t), "data"), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	pw, err := pglocal.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	v, err := pglocal.SCRAMVerifier(pw)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, ctx, c.URL("postgres"), "CREATE ROLE someone LOGIN PASSWORD '"+v+"'")
	file := filepath.Join(t.TempDir(), "pgpass")
	if err := pglocal.WritePassFile(file, "someone", pw); err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(c.URL("postgres"), "postgres@", "someone@", 1)
	u = strings.Replace(u, url.QueryEscape(c.PasswordFile()), url.QueryEscape(file), 1)
	exec(t, ctx, u, "SELECT 1")
}
