package launcher

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/cephlocal"
)

// Config is everything one run of the launcher needs, settled before anything starts.
type Config struct {
	// Root is the repository root: it holds go.work and services/.
	Root string
	// Home holds the runtime state: NATS data, a private Postgres, binaries, sockets.
	Home string
	// PortOffset shifts every TCP port the launcher listens on or assigns, so a second suite
	// (a test) can run beside a developer's.
	PortOffset int
	// DatabaseURL, when set, is used as is; otherwise the launcher finds or makes a server.
	DatabaseURL string
	// DatabaseName is the database the launcher creates and uses when it picks the server.
	DatabaseName string
	// PrivatePostgres skips the server on 127.0.0.1:5432 and always uses the private cluster.
	PrivatePostgres bool
	// NATSURL, when set, replaces the embedded NATS server.
	NATSURL string
	// ReadyTimeout bounds the wait for each service to report ready.
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait for services to exit after SIGTERM before they are killed.
	StopTimeout time.Duration
	// Out receives all output. Terminal says it is a terminal (children then log text, not
	// JSON); Color adds ANSI colours to the name prefixes.
	Out      io.Writer
	Terminal bool
	Color    bool
	// InfraOnly starts NATS and Postgres, builds the binaries and stays up without starting
	// any service (infra.go): the services are then run one by one with RunBinary (Tilt).
	InfraOnly bool
	// RunBinary, when set, runs only that binary in the foreground with the environment the
	// launcher would give it, next to a running InfraOnly launcher (runone.go).
	RunBinary string
	// NoInstall keeps the launcher from installing the Debian packages the binaries need,
	// even as root: it then only says what to install (needs.go).
	NoInstall bool
	// DevOIDC runs auth's local OpenID provider (`auth dev-oidc`) beside the suite and makes it
	// auth's provider "dev", with an admin user whose password is printed (devoidc.go).
	DevOIDC bool
	// NoCeph keeps the launcher from starting its dev Ceph for stats and as the default S3
	// store (ceph.go).
	NoCeph bool
	// LvmdVG names the loop-backed development volume group of lvmd-agent (lvmd.go). Volume
	// groups are global to the machine, so a second suite (a test) beside a developer's
	// needs its own.
	LvmdVG string

	// Environ is the launcher's environment, which every child inherits through ChildEnv
	// (that leaves out what the launcher decides and other binaries' settings). The launcher
	// reads the environment only here and in ParseConfig: no other code calls os.Getenv.
	Environ []string
	// The user's own settings of a binary, from Environ, where they replace what the launcher
	// would otherwise set or start for it: their device classes for lvmd-agent
	// (PLINTH_LVMD_CONFIG) and its default S3 store (PLINTH_LVMD_DEFAULT_S3_ENDPOINT), their
	// store configuration for cnpgi-plugin (PLINTH_CNPGI_CONFIG), their Ceph for stats
	// (PLINTH_STATS_CEPH_URL: no dev Ceph), the etcd kaas's control planes run
	// (PLINTH_KAAS_VAGRANT_ETCD; else Debian's /usr/bin/etcd, which make up installs).
	LvmdConfig, LvmdDefaultS3Endpoint, CNPGIConfig, StatsCephURL, KaasEtcd string

	// only, when set (tests), keeps just these of the binaries found under services/: a test
	// runs a part of the suite the way make up runs all of it.
	only []string
}

// Defaults from ARCHITECTURE.md.
const (
	defaultNATSPort     = 4222
	defaultPostgresAddr = "127.0.0.1:5432"
	defaultDatabaseName = "plinth"
)

// ParseConfig reads flags (which win) and PLINTH_* environment variables from environ
// (os.Environ() form, kept as Config.Environ for the children). The repository root defaults
// to the nearest directory above the working directory that holds go.work.
func ParseConfig(args []string, environ []string, out io.Writer) (Config, error) {
	fs := flag.NewFlagSet("plinth-up", flag.ContinueOnError)
	fs.SetOutput(out)
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v // a later duplicate wins, as in a shell
		}
	}
	getenv := func(k string) string { return vars[k] }
	c := Config{Out: out, Terminal: isTerminal(out), Environ: slices.Clone(environ),
		LvmdConfig: getenv(envLvmdConfig), LvmdDefaultS3Endpoint: getenv(envLvmdDefaultS3Endpoint),
		CNPGIConfig: getenv(envCNPGIConfig), StatsCephURL: getenv(envStatsCephURL),
		KaasEtcd: getenv(envKaasVagrantEtcd)}
	c.Color = c.Terminal && getenv("NO_COLOR") == ""
	offset, err := envInt(getenv, "PLINTH_PORT_OFFSET")
	if err != nil {
		return Config{}, err
	}
	fs.StringVar(&c.Root, "root", "", "repository root (default: nearest directory with go.work)")
	fs.StringVar(&c.Home, "home", getenv("PLINTH_HOME"), "runtime state directory (env PLINTH_HOME; default ROOT/.plinth)")
	fs.IntVar(&c.PortOffset, "port-offset", offset, "shift every TCP port by N (env PLINTH_PORT_OFFSET)")
	fs.StringVar(&c.DatabaseURL, "database-url", getenv(envDatabaseURL), "use this Postgres (env PLINTH_DATABASE_URL)")
	fs.StringVar(&c.DatabaseName, "database-name", orDefault(getenv("PLINTH_DATABASE_NAME"), defaultDatabaseName),
		"database to create and use when the launcher picks the server (env PLINTH_DATABASE_NAME)")
	fs.BoolVar(&c.PrivatePostgres, "private-postgres", getenv("PLINTH_PRIVATE_POSTGRES") == "1",
		"always run a private cluster under HOME/postgres (env PLINTH_PRIVATE_POSTGRES=1)")
	fs.StringVar(&c.NATSURL, "nats-url", getenv(envNATSURL), "use this NATS instead of the embedded one (env PLINTH_NATS_URL)")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", 90*time.Second, "how long each service may take to become ready")
	fs.DurationVar(&c.StopTimeout, "stop-timeout", 20*time.Second, "how long services may take to exit after SIGTERM")
	fs.BoolVar(&c.InfraOnly, "infra-only", false, "start NATS and Postgres, build the services and stay up without running them (the Tiltfile's infra)")
	fs.BoolVar(&c.NoInstall, "no-install", getenv("PLINTH_NO_INSTALL") == "1",
		"never install missing Debian packages (as root it otherwise does, one apt-get call); say what to install instead (env PLINTH_NO_INSTALL=1)")
	fs.BoolVar(&c.NoCeph, "no-ceph", getenv("PLINTH_NO_CEPH") == "1",
		"do not start the dev Ceph (HOME/ceph: stats's cluster and the default S3 store) that make up starts as root (env PLINTH_NO_CEPH=1)")
	fs.BoolVar(&c.DevOIDC, "dev-oidc", false,
		"also run a local OpenID provider (auth dev-oidc on 127.0.0.1:7008) as auth's provider \"dev\", for trying \"Sign in with Dev\"; its admin user's password is printed")
	fs.StringVar(&c.LvmdVG, "lvmd-vg", orDefault(getenv("PLINTH_LVMD_VG"), "plinth"),
		"the loop-backed volume group made for lvmd-agent as root (kept across runs; env PLINTH_LVMD_VG)")
	fs.StringVar(&c.RunBinary, "run", "", "run only this service binary in the foreground, with the environment make up gives it, beside a running -infra-only")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments %q: plinth-up takes only flags (see -h)", fs.Args())
	}
	if c.Root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Config{}, fmt.Errorf("find repository root: %w", err)
		}
		if c.Root, err = findRoot(wd); err != nil {
			return Config{}, err
		}
	}
	if c.Home == "" {
		c.Home = filepath.Join(c.Root, ".plinth")
	}
	if c.Root, err = filepath.Abs(c.Root); err != nil {
		return Config{}, err
	}
	if c.Home, err = filepath.Abs(c.Home); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if _, err := os.Stat(filepath.Join(c.Root, "go.work")); err != nil {
		return fmt.Errorf("%s is not the Plinth repository root (no go.work): run from the repository or pass -root", c.Root)
	}
	if c.PortOffset < 0 || defaultNATSPort+c.PortOffset > 65000 || cephBasePort+cephlocal.BlockSize+c.PortOffset > 65000 {
		return fmt.Errorf("port offset %d out of range: it must keep every port between 1024 and 65000", c.PortOffset)
	}
	if !validDatabaseName(c.DatabaseName) {
		return fmt.Errorf("database name %q: use lower-case letters, digits and _ (at most 63)", c.DatabaseName)
	}
	switch c.DatabaseName {
	case "postgres", "template0", "template1": // the services' role is named like its database
		return fmt.Errorf("database name %q is the server's own: choose another (the services' role takes the database's name)", c.DatabaseName)
	}
	if c.InfraOnly && c.RunBinary != "" {
		return errors.New("-infra-only and -run exclude each other: start one launcher with -infra-only, then one -run per service")
	}
	if c.DevOIDC && (c.InfraOnly || c.RunBinary != "") {
		return errors.New("-dev-oidc runs with the whole suite only (make up), not with -infra-only or -run")
	}
	if c.ReadyTimeout <= 0 || c.StopTimeout <= 0 {
		return errors.New("-ready-timeout and -stop-timeout must be positive durations")
	}
	return nil
}

func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work in %s or above: run plinth-up inside the Plinth repository or pass -root", dir)
		}
	}
}

func envInt(getenv func(string) string, key string) (int, error) {
	v := getenv(key)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: want an integer", key, v)
	}
	return n, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// validDatabaseName accepts the names the launcher creates without quoting surprises:
// lower-case letters, digits and _, not starting with a digit, at most 63 bytes.
func validDatabaseName(s string) bool {
	if s == "" || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
