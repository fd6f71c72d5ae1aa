package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/natsembed"
	"github.com/plinth-dev/plinth/libs/platform/pglocal"
)

// env is the Postgres and NATS every measurement shares; each measurement gets its own
// database and JetStream store.
type env struct {
	opts    options
	pg      *pglocal.Cluster // nil with -database-url
	baseURL string           // the postgres database of the server
	work    string
	seq     int
}

func startEnv(ctx context.Context, o options) (*env, error) {
	e := &env{opts: o, baseURL: o.databaseURL, work: o.work}
	if e.baseURL == "" {
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		opts := pglocal.Options{DataDir: filepath.Join(o.work, "pg"), Logger: log}
		c, err := pglocal.Start(ctx, opts)
		if err != nil {
			return nil, err
		}
		if o.statements {
			if c, err = withStatements(ctx, c, opts); err != nil {
				return nil, err
			}
		}
		e.pg, e.baseURL = c, c.URL("postgres")
	}
	return e, nil
}

// withStatements restarts the cluster with pg_stat_statements loaded.
func withStatements(ctx context.Context, c *pglocal.Cluster, opts pglocal.Options) (*pglocal.Cluster, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return nil, err
	}
	_, err = conn.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`)
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.Stop(ctx); err != nil {
		return nil, err
	}
	return pglocal.Start(ctx, opts)
}

func (e *env) close() {
	if e.pg != nil {
		_ = e.pg.Stop(context.Background())
	}
}

// database creates a fresh database and returns its URL.
func (e *env) database(ctx context.Context) (string, string, error) {
	e.seq++
	name := fmt.Sprintf("vagrant_bench_%d_%d", os.Getpid(), e.seq)
	conn, err := pgx.Connect(ctx, e.baseURL)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", "", err
	}
	u, err := url.Parse(e.baseURL)
	if err != nil {
		return "", "", err
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

func (e *env) dropDatabase(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.baseURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// nats starts an embedded JetStream server with its own store for one measurement.
func (e *env) nats(dir string) (*natsembed.Server, error) {
	return natsembed.Start(natsembed.Options{StoreDir: filepath.Join(dir, "nats")})
}

// postmaster is the pid of the private cluster's postmaster, 0 with -database-url.
func (e *env) postmaster() int {
	if e.pg == nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(e.work, "pg", "postmaster.pid"))
	if err != nil {
		return 0
	}
	var pid int
	fmt.Sscanf(string(b), "%d", &pid)
	return pid
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
