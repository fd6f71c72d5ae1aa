package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// database is the Postgres of this run: the user's, the machine's, or a private cluster.
type database struct {
	url      string
	describe string
	private  *pglocal.Cluster
}

// openDatabase picks Postgres in the order the README promises: PLINTH_DATABASE_URL, else a
// server answering on 127.0.0.1:5432, else a private cluster under HOME/postgres. On a server
// it picks, it connects as postgres (a password from PGPASSFILE or ~/.pgpass; the private
// cluster's own pass file) and gives the services a role of their own (serviceDatabase).
func openDatabase(ctx context.Context, c Config, say func(string, ...any), log *slog.Logger, m machine) (*database, error) {
	if c.DatabaseURL != "" {
		if err := ping(ctx, c.DatabaseURL); err != nil {
			return nil, fmt.Errorf("PLINTH_DATABASE_URL=%s: %w; fix the URL or unset it to let plinth-up pick a server", redact(c.DatabaseURL), err)
		}
		return &database{url: c.DatabaseURL, describe: "from PLINTH_DATABASE_URL"}, nil
	}
	if !c.PrivatePostgres && answering(defaultPostgresAddr) {
		admin := "postgres://postgres@" + defaultPostgresAddr + "/postgres?sslmode=disable"
		dbURL, err := serviceDatabase(ctx, admin, defaultPostgresAddr, c.DatabaseName, c.Home)
		if err == nil {
			return &database{url: dbURL, describe: "server on " + defaultPostgresAddr}, nil
		}
		say("a server answers on %s but %v; using a private cluster instead (set PLINTH_DATABASE_URL to use that server)", defaultPostgresAddr, err)
	}
	// Installed up front with the services' needs, unless the server on 5432 failed us above.
	if _, err := settleNeeds(ctx, postgresBinaries(), m, say); err != nil {
		return nil, err
	}
	dir := filepath.Join(c.Home, "postgres")
	cl, err := pglocal.Start(ctx, pglocal.Options{DataDir: dir, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start private Postgres in %s: %w", dir, err)
	}
	dbURL, err := serviceDatabase(ctx, cl.URL("postgres"), fmt.Sprintf("127.0.0.1:%d", cl.Port()), c.DatabaseName, c.Home)
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, cl.Stop(stopCtx))
	}
	return &database{url: dbURL, describe: "private cluster, data " + dir, private: cl}, nil
}

// stop stops a private cluster; servers the launcher did not start are left alone.
func (d *database) stop(ctx context.Context) error {
	if d == nil || d.private == nil {
		return nil
	}
	return d.private.Stop(ctx)
}

// postgresNeed is the private cluster's need for PostgreSQL's server binaries when this run
// will make one and they are missing: settled with the services' needs, so one apt-get call
// installs everything.
func postgresNeed(c Config) []unmet {
	if c.DatabaseURL != "" || (!c.PrivatePostgres && answering(defaultPostgresAddr)) {
		return nil
	}
	return postgresBinaries()
}

// postgresBinaries is the need for the server binaries pglocal runs, when they are missing.
func postgresBinaries() []unmet {
	present := func() bool { _, err := pglocal.FindBinaries(); return err == nil }
	if present() {
		return nil
	}
	return []unmet{{binary: "the private Postgres", present: present,
		need: Need{Command: "initdb", Package: "postgresql", Why: "a cluster under the runtime home"}}}
}

func ping(ctx context.Context, dbURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// redact hides a password in a URL before it is printed or written anywhere.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
