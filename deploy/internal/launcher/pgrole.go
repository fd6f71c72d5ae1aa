package launcher

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// DatabasePassFile is the pgpass file, inside the runtime home (mode 0600), holding the
// password of the role the services connect as. Their URL names it (passfile=…): no
// password travels in an environment variable, a process's arguments or a log line.
const DatabasePassFile = "database.pgpass"

// serviceDatabase makes the services' own role and database on the server at adminURL and
// returns the URL the services connect with. The role is named like the database (plinth by
// default), owns it and nothing else: not a superuser, it cannot create roles or databases,
// so a service can migrate its own schema but not read pg_authid, run programs as the
// server (COPY … PROGRAM) or read the server's files. Each start sets the role's password
// from HOME/database.pgpass (made when missing) and hands it objects that an earlier run
// made as the superuser, so an existing database keeps working.
func serviceDatabase(ctx context.Context, adminURL, addr, name, home string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	passFile := filepath.Join(home, DatabasePassFile)
	password, err := pglocal.ReadPassFile(passFile, name)
	if err != nil { // none yet, or one for another database name
		if password, err = pglocal.NewPassword(); err != nil {
			return "", err
		}
		if err := pglocal.WritePassFile(passFile, name, password); err != nil {
			return "", err
		}
	}
	verifier, err := pglocal.SCRAMVerifier(password)
	if err != nil {
		return "", err
	}
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("cannot connect as %s: %w", redact(adminURL), err)
	}
	defer func() { _ = admin.Close(context.WithoutCancel(ctx)) }()
	if err := ensureRole(ctx, admin, name, verifier); err != nil {
		return "", err
	}
	if err := ensureOwnedDatabase(ctx, admin, name); err != nil {
		return "", err
	}
	if err := handOver(ctx, adminURL, name); err != nil {
		return "", err
	}
	u := url.URL{Scheme: "postgres", User: url.User(name), Host: addr, Path: "/" + name,
		RawQuery: url.Values{"sslmode": {"disable"}, "passfile": {passFile}}.Encode()}
	return u.String(), nil
}

// plainRole is what the services' role may do: log in, nothing more. Said again at every
// start, so a role someone made a superuser by hand is brought back.
const plainRole = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"

// ensureRole creates the role name or resets its attributes and password (the verifier:
// the password itself never reaches the server, where log_statement could write it).
func ensureRole(ctx context.Context, admin *pgx.Conn, name, verifier string) error {
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up role %s: %w", name, err)
	}
	verb := "ALTER"
	if !exists {
		verb = "CREATE"
	}
	// Role attributes and passwords take no parameters; the verifier is base64 and "$:".
	_, err := admin.Exec(ctx, verb+" ROLE "+pgx.Identifier{name}.Sanitize()+" "+plainRole+" PASSWORD '"+verifier+"'")
	var pgErr *pgconn.PgError
	if !exists && errors.As(err, &pgErr) && pgErr.Code == "42710" { // created meanwhile by another launcher
		_, err = admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{name}.Sanitize()+" "+plainRole+" PASSWORD '"+verifier+"'")
	}
	if err != nil {
		return fmt.Errorf("%s role %s: %w", strings.ToLower(verb), name, err)
	}
	return nil
}

// ensureOwnedDatabase creates the database name owned by the role name, or gives it to the
// role; other roles on the server may not connect to it.
func ensureOwnedDatabase(ctx context.Context, admin *pgx.Conn, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if !exists {
		_, err := admin.Exec(ctx, "CREATE DATABASE "+ident+" OWNER "+ident)
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // made concurrently
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	for _, stmt := range []string{"ALTER DATABASE " + ident + " OWNER TO " + ident, "REVOKE ALL ON DATABASE " + ident + " FROM PUBLIC"} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("give database %s to its role: %w", name, err)
		}
	}
	return nil
}

// handOverSQL gives role %[1]s what the superuser made in this database's own schemas (a
// database from before the services had their own role): schemas, tables, views and their
// free-standing sequences, functions and types. Indexes, triggers and owned sequences follow
// their tables.
const handOverSQL = `DO $$
DECLARE
  r record;
  own constant regrole := %[1]s::regrole;
BEGIN
  FOR r IN SELECT n.nspname FROM pg_namespace n
      WHERE n.nspname NOT LIKE 'pg\_%%' AND n.nspname <> 'information_schema'
        AND n.nspname <> 'public' AND n.nspowner <> own LOOP
    EXECUTE format('ALTER SCHEMA %%I OWNER TO %%s', r.nspname, own);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS obj, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname NOT LIKE 'pg\_%%' AND n.nspname <> 'information_schema' AND c.relowner <> own
        AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
        AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                 AND d.objid = c.oid AND d.deptype IN ('a', 'i'))) LOOP
    EXECUTE format('ALTER %%s %%s OWNER TO %%s', CASE r.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
      WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.obj, own);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS fn, p.prokind FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname NOT LIKE 'pg\_%%' AND n.nspname <> 'information_schema' AND p.proowner <> own LOOP
    EXECUTE format('ALTER %%s %%s OWNER TO %%s', CASE r.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'
      ELSE 'FUNCTION' END, r.fn, own);
  END LOOP;
  FOR r IN SELECT t.oid::regtype AS typ, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname NOT LIKE 'pg\_%%' AND n.nspname <> 'information_schema' AND t.typowner <> own
        AND (t.typtype IN ('e', 'r', 'd') OR t.typtype = 'c' AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c') LOOP
    EXECUTE format('ALTER %%s %%s OWNER TO %%s', CASE r.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, r.typ, own);
  END LOOP;
END $$`

// handOver runs handOverSQL in the database name, as the superuser.
func handOver(ctx context.Context, adminURL, name string) error {
	u, err := url.Parse(adminURL)
	if err != nil {
		return fmt.Errorf("admin URL: %w", err)
	}
	u.Path = "/" + name
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("cannot connect as %s: %w", redact(u.String()), err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	// The role name is validated (validDatabaseName): a plain identifier, quoted as a literal.
	if _, err := conn.Exec(ctx, fmt.Sprintf(handOverSQL, "'"+name+"'")); err != nil {
		return fmt.Errorf("hand database %s's objects to role %s: %w", name, name, err)
	}
	return nil
}
