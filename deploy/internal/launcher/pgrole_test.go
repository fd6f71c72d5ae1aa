package launcher

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// TestServiceDatabaseTakesOverAnEarlierRunsDatabase: on a server the launcher picks, the
// services get a role of their own even where an earlier run made the database and its
// schemas as the superuser: the role owns them afterwards, and a second start keeps the same
// password file working.
func TestServiceDatabaseTakesOverAnEarlierRunsDatabase(t *testing.T) {
	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		testenv.SkipOrFail(t, "TEST_DATABASE_URL (a role that may create roles and databases) is unset")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("TEST_DATABASE_URL: %v", err))
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	name := fmt.Sprintf("plinth_launcher_%d", rand.Uint32())
	ident := pgx.Identifier{name}.Sanitize()
	t.Cleanup(func() { // before the admin connection closes (cleanups run last first)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, stmt := range []string{"DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)", "DROP ROLE IF EXISTS " + ident} {
			if _, err := admin.Exec(ctx, stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	// An earlier run's database: everything in it the superuser's.
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	old, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, `CREATE SCHEMA svc; CREATE TABLE svc.t (id bigserial PRIMARY KEY, v text);
		CREATE SEQUENCE svc.s; CREATE FUNCTION svc.f() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
		CREATE TRIGGER tr BEFORE INSERT ON svc.t FOR EACH ROW EXECUTE FUNCTION svc.f(); CREATE TYPE svc.e AS ENUM ('a')`); err != nil {
		t.Fatal(err)
	}
	_ = old.Close(ctx)

	home := t.TempDir()
	for start := range 2 {
		dbURL, err := serviceDatabase(ctx, adminURL, u.Host, name, home)
		if err != nil {
			t.Fatalf("start %d: %v", start+1, err)
		}
		requireServiceRole(t, ctx, dbURL, name)
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		// What a service's migration does to its own schema, on the superuser's old objects.
		for _, stmt := range []string{"INSERT INTO svc.t (v) VALUES ('x')", "SELECT nextval('svc.s')",
			"ALTER TABLE svc.t ADD COLUMN IF NOT EXISTS w int", "CREATE OR REPLACE FUNCTION svc.f() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$",
			"ALTER TYPE svc.e ADD VALUE IF NOT EXISTS 'b'"} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Errorf("start %d, %s: %v", start+1, stmt, err)
			}
		}
		_ = conn.Close(ctx)
	}
	var connectable bool
	if err := admin.QueryRow(ctx, "SELECT has_database_privilege('public', $1, 'CONNECT')", name).Scan(&connectable); err != nil || connectable {
		t.Errorf("every role may connect to %s: %v", name, err)
	}
}
