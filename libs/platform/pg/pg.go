// Package pg opens a service's Postgres pool, confined to the service's own schema and
// migrated to the service's embedded, append-only migrations.
package pg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"regexp"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/libs/platform/backoff"
)

// ServiceSource is the schema_migrations source of the migrations passed to Open
// directly (the service's own), as opposed to library sets passed as extras.
const ServiceSource = "service"

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidateSchema reports whether name is usable as a schema name: lowercase letters,
// digits and underscores, not starting with a digit, at most 63 bytes (no quoting
// surprises, no truncation by Postgres).
func ValidateSchema(name string) error {
	if !identRE.MatchString(name) {
		return fmt.Errorf("schema name %q is invalid: use 1-63 lowercase letters, digits and "+
			"underscores, not starting with a digit", name)
	}
	return nil
}

// Open connects to dbURL, migrates schema and returns a pool whose connections have
// search_path set to that schema only, so the service's SQL uses unqualified names.
//
// A search_path parameter in dbURL overrides schema: tests (testenv.DB) and operators
// running two instances in one database use it to move a service to another schema.
// Migrations must therefore never qualify names with a schema.
//
// Migrations are the files NNN_name.up.sql anywhere in the migrations FS (typically a
// //go:embed of a migrations directory). extra sets (e.g. the events outbox tables) are
// versioned independently under their own Source and applied before the service's own.
func Open(ctx context.Context, dbURL, schema string, migrations fs.FS, extra ...MigrationSet) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("pg: parse database URL: %w", err)
	}
	if override, ok := cfg.ConnConfig.RuntimeParams["search_path"]; ok && override != "" {
		schema = override
	}
	if err := ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("pg: %w", err)
	}
	sets := append(append([]MigrationSet(nil), extra...), MigrationSet{Source: ServiceSource, FS: migrations})
	loaded, err := loadSets(sets)
	if err != nil {
		return nil, fmt.Errorf("pg: %w", err)
	}
	// Startup parameter rather than a SET in AfterConnect: no extra round trip per
	// connection, and a DISCARD ALL / RESET ALL keeps it.
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pg: create pool: %w", err)
	}
	if err := waitReachable(ctx, pool, StartWait); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pg: connect to %s: %w", redact(cfg), err)
	}
	if err := migrate(ctx, pool, schema, loaded); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pg: migrate schema %s: %w", schema, err)
	}
	return pool, nil
}

// StartWait is how long Open waits for a database that is not reachable yet (not running,
// starting up, its address not yet resolvable): services started beside their database — a
// compose project, a Kubernetes namespace applied at once — wait for it instead of exiting
// and being restarted. Refusals that waiting does not cure (a wrong password, no such
// database) fail at once.
var StartWait = 90 * time.Second

// waitReachable pings until the server answers, a non-transient error, or wait has passed.
func waitReachable(ctx context.Context, pool *pgxpool.Pool, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	b := backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for {
		err := pool.Ping(ctx)
		if err == nil || !transient(err) || time.Now().After(deadline) {
			return err
		}
		if !backoff.Sleep(ctx, b.Next(), nil) {
			return err
		}
	}
}

// transient: the server cannot be reached yet, or is starting or shutting down.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "57P03" || pgErr.Code == "57P01" // cannot_connect_now, admin_shutdown
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &opErr) || errors.As(err, &dnsErr) || errors.Is(err, syscall.ECONNREFUSED)
}

// redact names the server without credentials, for error messages.
func redact(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// TxStarter is what InTx needs: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx (savepoint).
type TxStarter interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InTx runs fn in a transaction: committed when fn returns nil, rolled back otherwise
// (fn's error is returned unchanged, so callers can errors.Is it).
func InTx(ctx context.Context, db TxStarter, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, fn)
}
