package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// Database is a fresh, empty schema reserved for one test.
type Database struct {
	// Pool's connections have search_path = Schema.
	Pool *pgxpool.Pool
	// URL is the server URL plus search_path=Schema: pg.Open honours it, so code under
	// test that opens its own pool lands in this schema too.
	URL string
	// Schema is unique per call: derived from the test name plus random bits.
	Schema string
}

// server is the Postgres all schemas of this test binary live in. It is process-wide
// state, the one exception to "no globals": a test binary needs exactly one cluster
// shared by all its (parallel) tests, and Go gives tests no other place to keep it.
var server postgresServer

type postgresServer struct {
	mu         sync.Mutex
	mainActive bool
	ready      bool
	err        error
	baseURL    string
	admin      *pgxpool.Pool
	cluster    *pglocal.Cluster
	clusterDir string
}

// Main runs the package's tests and then stops the private Postgres cluster, if DB
// started one, and removes the binaries Binary built. Every package that uses DB needs it:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	server.mu.Lock()
	server.mainActive = true
	server.mu.Unlock()
	code := m.Run()
	removeBinaries()
	if err := server.close(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// DB creates a uniquely named schema for this test in TEST_DATABASE_URL, or in a private
// cluster started once per test binary when that is unset, and drops it (CASCADE) when
// the test ends. Safe for parallel tests. Neither URL holds a password: TEST_DATABASE_URL's
// comes from the environment (PGPASSFILE, or the URL's passfile parameter), the private
// cluster's from its own 0600 pass file, which its URL names.
func DB(t testing.TB) Database {
	t.Helper()
	admin, base, err := server.get()
	if errors.Is(err, errNoMain) {
		t.Fatal(err)
	}
	if err != nil {
		SkipOrFail(t, err.Error())
	}
	schema := "t_" + sanitize(t.Name(), 40) + "_" + randomHex(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		t.Fatalf("testenv: create schema %s: %v", schema, err)
	}
	dbURL, err := WithSearchPath(base, schema)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatalf("testenv: pool for %s: %v", schema, err)
	}
	// Registered after the caller's earlier cleanups and before any later ones: pools the
	// test opens afterwards are closed (LIFO) before the schema is dropped.
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			t.Errorf("testenv: drop schema %s (is a pool from this test still in use?): %v", schema, err)
		}
	})
	return Database{Pool: pool, URL: dbURL, Schema: schema}
}

// WithSearchPath returns dbURL with its search_path parameter set to schema.
func WithSearchPath(dbURL, schema string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("database URL must look like postgres://user@host:port/db (got a %q scheme)", u.Scheme)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

var errNoMain = errors.New("testenv.DB needs testenv.Main: add " +
	"`func TestMain(m *testing.M) { testenv.Main(m) }` to this package's tests, " +
	"so the shared Postgres is stopped when they end")

// get connects to (and when needed starts) the shared server, once.
func (s *postgresServer) get() (*pgxpool.Pool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mainActive {
		return nil, "", errNoMain
	}
	if s.ready {
		return s.admin, s.baseURL, s.err
	}
	s.ready = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.baseURL = os.Getenv("TEST_DATABASE_URL")
	if s.baseURL == "" {
		if s.err = s.startCluster(ctx); s.err != nil {
			return nil, "", s.err
		}
	}
	admin, err := pgxpool.New(ctx, s.baseURL)
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if admin != nil {
			admin.Close()
		}
		s.err = fmt.Errorf("cannot reach Postgres at TEST_DATABASE_URL or the private cluster: %w", err)
		return nil, "", s.err
	}
	s.admin = admin
	return s.admin, s.baseURL, nil
}

func (s *postgresServer) startCluster(ctx context.Context) error {
	if _, err := pglocal.FindBinaries(); err != nil {
		return fmt.Errorf("TEST_DATABASE_URL is unset and no local PostgreSQL to start: %w", err)
	}
	reapStaleClusters(ctx)
	dir, err := processDir(clusterDirPrefix)
	if err != nil {
		return fmt.Errorf("temp dir for Postgres: %w", err)
	}
	// When tests run as root, the cluster runs as the postgres user, which must be able
	// to traverse into the data directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	c, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(dir, "data"), NoSync: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("start private Postgres (set TEST_DATABASE_URL to use an existing server): %w", err)
	}
	s.cluster, s.clusterDir, s.baseURL = c, dir, c.URL("postgres")
	return nil
}

// close releases what get acquired; Main calls it after all tests have finished.
func (s *postgresServer) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.cluster.Stop(ctx)
	if err == nil {
		err = os.RemoveAll(s.clusterDir)
	}
	s.cluster = nil
	return err
}
