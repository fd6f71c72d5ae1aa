// Package pglocal runs a private PostgreSQL cluster (initdb + pg_ctl) for local runs and tests.
package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/libs/platform/ports"
)

// Options configures Start.
type Options struct {
	// DataDir holds the cluster. A directory without PG_VERSION is initialised
	// (it must then be empty or absent); an existing cluster is reused.
	DataDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free port below 32768.
	Port int
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// NoSync turns fsync, synchronous_commit and full_page_writes off: much faster,
	// and a crash can corrupt the cluster. For throw-away test clusters only.
	NoSync bool
}

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dataDir   string
	port      int
	socketDir string
	// ownSocketDir is removed at Stop: it was created because the data directory's
	// path is too long for a unix socket.
	ownSocketDir bool
	run          *runner
	log          *slog.Logger

	stopOnce sync.Once
	stopErr  error
}

const startTimeout = 60 * time.Second

// Start initialises DataDir when it holds no cluster, then starts PostgreSQL on
// 127.0.0.1 and waits until it accepts connections. Loopback is open to every account on
// the machine, so nothing is trusted: superuser "postgres" has a generated password, kept in
// DataDir/PassFileName (0600, the cluster owner's), and every connection proves it
// (scram-sha-256). URL names that file, so its clients need no password of their own.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.DataDir == "" {
		return nil, errors.New("pglocal: Options.DataDir is required")
	}
	if o.Port < 0 || o.Port > 65535 {
		return nil, fmt.Errorf("pglocal: port %d out of range", o.Port)
	}
	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pglocal: data dir: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	r, err := newRunner(binDir)
	if err != nil {
		return nil, err
	}
	if err := prepareDataDir(ctx, r, dataDir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		log.Info("initialising PostgreSQL cluster", "data_dir", dataDir, "bin_dir", binDir)
		if err := initdb(ctx, r, dataDir, o.NoSync); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("pglocal: %w", err)
	}
	if err := ensureInclude(dataDir); err != nil {
		return nil, fmt.Errorf("pglocal: %w", err)
	}
	// A postmaster left by a process that died without Stop holds the data directory;
	// it is ours (private cluster), so restart it with this run's settings.
	if _, err := r.run(ctx, "pg_ctl", "status", "-D", dataDir); err == nil {
		log.Warn("PostgreSQL from an earlier run still running on this data directory; restarting it", "data_dir", dataDir)
		if err := stopDataDir(ctx, r, log, dataDir, "fast"); err != nil {
			return nil, err
		}
	}
	if err := writeHBA(r, dataDir); err != nil {
		return nil, err
	}
	if err := ensurePassword(ctx, r, dataDir); err != nil {
		return nil, err
	}
	c := &Cluster{dataDir: dataDir, run: r, log: log}
	if err := c.start(ctx, o); err != nil {
		c.removeSocketDir()
		return nil, err
	}
	log.Info("PostgreSQL started", "data_dir", dataDir, "port", c.port)
	return c, nil
}

func prepareDataDir(ctx context.Context, r *runner, dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("pglocal: create data dir: %w", err)
	}
	// PostgreSQL insists on 0700 (or 0750) and on owning its data directory.
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return fmt.Errorf("pglocal: chmod data dir: %w", err)
	}
	if err := r.chown(dataDir); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := r.checkAccess(ctx, dataDir); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}

func initdb(ctx context.Context, r *runner, dataDir string, noSync bool) error {
	// reject: the cluster admits nobody until Start has written its pg_hba.conf and set the
	// superuser's password (initdb would want the password in a file of its own).
	args := []string{"-D", dataDir, "-U", superuser, "--auth=reject", "--encoding=UTF8", "--no-locale"}
	if noSync {
		args = append(args, "--no-sync")
	}
	if _, err := r.run(ctx, "initdb", args...); err != nil {
		return fmt.Errorf("pglocal: initdb failed (the data directory must be empty or absent): %w", err)
	}
	return nil
}

// start picks a port, writes plinth.conf and runs pg_ctl start; with Port 0 it retries
// on another port when the one picked was taken meanwhile.
func (c *Cluster) start(ctx context.Context, o Options) error {
	attempts := 1
	if o.Port == 0 {
		attempts = 5
	}
	var lastErr error
	for range attempts {
		port := o.Port
		if port == 0 {
			p, err := ports.Free(1)
			if err != nil {
				return fmt.Errorf("pglocal: %w", err)
			}
			port = p[0]
		}
		if err := c.configure(port, o.NoSync); err != nil {
			return err
		}
		lastErr = c.pgCtlStart(ctx)
		if lastErr == nil {
			return c.waitReady(ctx)
		}
		if !strings.Contains(lastErr.Error(), "could not bind") && !strings.Contains(lastErr.Error(), "already in use") {
			return lastErr
		}
		c.log.Warn("PostgreSQL port taken, retrying", "port", port)
	}
	return lastErr
}

func (c *Cluster) configure(port int, noSync bool) error {
	c.port = port
	c.removeSocketDir()
	c.socketDir = c.dataDir
	if !socketPathFits(c.dataDir, port) {
		dir, err := os.MkdirTemp("", "pgsock-")
		if err != nil {
			return fmt.Errorf("pglocal: socket dir: %w", err)
		}
		c.socketDir, c.ownSocketDir = dir, true
		if err := c.run.chown(dir); err != nil {
			return fmt.Errorf("pglocal: %w", err)
		}
	}
	path := filepath.Join(c.dataDir, confFile)
	if err := os.WriteFile(path, settings(port, c.socketDir, noSync), 0o600); err != nil {
		return fmt.Errorf("pglocal: write %s: %w", path, err)
	}
	if err := c.run.chown(path); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}

func (c *Cluster) pgCtlStart(ctx context.Context) error {
	logFile := filepath.Join(c.dataDir, "postgres.log")
	_, err := c.run.run(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w",
		"-t", fmt.Sprint(int(startTimeout.Seconds())), "-s")
	if err != nil {
		return fmt.Errorf("pglocal: start PostgreSQL: %w\n%s", err, tail(logFile, 15))
	}
	return nil
}

// waitReady returns once a real client can connect: pg_ctl -w only reads the pid file.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "28") { // invalid authorization
			return fmt.Errorf("pglocal: PostgreSQL on port %d refuses the password in %s (%s): "+
				"delete that file and start again to have a new one set", c.port, c.PasswordFile(), pgErr.Message)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pglocal: PostgreSQL on port %d not accepting connections: %w", c.port, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URL returns a connection URL for database on this cluster, as the superuser. It holds no
// password: its passfile parameter names PasswordFile, which pgx and libpq read.
func (c *Cluster) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(superuser), Host: fmt.Sprintf("127.0.0.1:%d", c.port), Path: "/" + database,
		RawQuery: url.Values{"sslmode": {"disable"}, "passfile": {c.PasswordFile()}}.Encode()}
	return u.String()
}

// PasswordFile is the pgpass file (mode 0600) holding the superuser's password.
func (c *Cluster) PasswordFile() string { return filepath.Join(c.dataDir, PassFileName) }

// Port returns the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// Stop shuts the cluster down (fast mode: open sessions are disconnected) and waits.
// Calling it again returns the first result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		c.stopErr = stopDataDir(ctx, c.run, c.log, c.dataDir, "fast")
		c.removeSocketDir()
		if c.stopErr == nil {
			c.log.Info("PostgreSQL stopped", "data_dir", c.dataDir)
		}
	})
	return c.stopErr
}

func (c *Cluster) removeSocketDir() {
	if c.ownSocketDir {
		_ = os.RemoveAll(c.socketDir)
		c.ownSocketDir = false
	}
}

// StopDataDir stops whatever postmaster runs on dataDir, in immediate mode: for
// clusters left running by a process that died before calling Stop.
func StopDataDir(ctx context.Context, dataDir string) error {
	binDir, err := FindBinaries()
	if err != nil {
		return err
	}
	r, err := newRunner(binDir)
	if err != nil {
		return err
	}
	return stopDataDir(ctx, r, slog.New(slog.DiscardHandler), dataDir, "immediate")
}

func stopDataDir(ctx context.Context, r *runner, log *slog.Logger, dataDir, mode string) error {
	pid, running := postmasterPID(dataDir)
	if !running {
		return nil
	}
	_, err := r.run(ctx, "pg_ctl", "stop", "-D", dataDir, "-m", mode, "-w", "-t", "60", "-s")
	if err != nil && mode != "immediate" && !pidGone(pid) {
		// The budget ran out (or pg_ctl failed) with the postmaster still shutting down:
		// it must not outlive its caller, so it ends now, as a crash would end it.
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), immediateStopTimeout)
		defer cancel()
		if _, ierr := r.run(ictx, "pg_ctl", "stop", "-D", dataDir, "-m", "immediate", "-w", "-t", "60", "-s"); ierr == nil {
			log.Warn("PostgreSQL did not stop in time and was stopped in immediate mode (its next start recovers from the WAL)",
				"data_dir", dataDir, "mode", mode, "error", err)
		}
	}
	if err != nil && pidGone(pid) {
		err = nil // a stale pid file that pg_ctl cleaned up, or the immediate stop above
	}
	if err != nil {
		return fmt.Errorf("pglocal: stop PostgreSQL: %w", err)
	}
	// pg_ctl returns when postmaster.pid is gone; the postmaster removes it just before it
	// exits. Callers check that nothing of theirs runs once Stop returns.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), immediateStopTimeout)
	defer cancel()
	for !pidGone(pid) {
		select {
		case <-wctx.Done():
			return fmt.Errorf("pglocal: postmaster %d still runs after pg_ctl stop", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// immediateStopTimeout bounds the steps Stop takes after its caller's budget ran out.
const immediateStopTimeout = 30 * time.Second

// postmasterPID reads the postmaster's process id from dataDir/postmaster.pid; false when
// the file is absent (nothing runs) or unreadable.
func postmasterPID(dataDir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, !errors.Is(err, os.ErrNotExist)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, true
	}
	return pid, true
}

// pidGone reports whether process pid has exited (a zombie counts as exited: a subreaper
// may reap it late). pid 0 (unknown) is never gone.
func pidGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// tail returns the last n lines of a log file, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
