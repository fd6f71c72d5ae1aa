package upstreamtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/plinth-dev/plinth/libs/platform/pglocal"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/libs/storage/s3test"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const pluginName = "cnpgi.plinth.dev"

// pluginBinary builds cmd/cnpgi-plugin once per test binary, into a directory every user
// can read, since PostgreSQL runs it as archive_command under the postgres user.
func pluginBinary(t *testing.T) string {
	t.Helper()
	return testenv.Binary(t, "../../cmd/cnpgi-plugin")
}

// owner is the account the plugin and PostgreSQL run as: postgres when the tests run as
// root (PostgreSQL refuses root, and the plugin must own the socket PostgreSQL dials).
type owner struct {
	name     string
	uid, gid int
}

func runAs(t *testing.T) *owner {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		testenv.SkipOrFail(t, "running as root needs the postgres user (apt-get install postgresql)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &owner{name: u.Username, uid: uid, gid: gid}
}

// home makes a directory tree the owner can use, under a parent it can traverse.
func home(t *testing.T, o *owner) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cnpgi-upstream-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o.chown(t, dir)
	return dir
}

func (o *owner) chown(t *testing.T, paths ...string) {
	t.Helper()
	if o == nil {
		return
	}
	for _, p := range paths {
		if err := os.Chown(p, o.uid, o.gid); err != nil {
			t.Fatal(err)
		}
	}
}

// mkdir creates dir (and parents under an owned tree) owned by o.
func (o *owner) mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o.chown(t, dir)
	return dir
}

func (o *owner) writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	o.chown(t, path)
}

// plugin is one running cnpgi-plugin process.
type plugin struct {
	owner  *owner
	home   string
	socket string
	logs   *syncBuffer
	s3     *s3test.Server
	bucket string
	dbURL  string
	conn   *grpc.ClientConn
}

// startPlugin runs the binary with three stores: "local" (POSIX, the default), "s3" (a
// real versitygw, credentials by env and file reference, zstd) and "s3gz" (the same bucket
// under "barman", gzip: what barman 3.4 reads), all with maxParallel. extraEnv
// (NAME=value) is added to, or overrides, the plugin's environment.
func startPlugin(t *testing.T, maxParallel int, extraEnv ...string) *plugin {
	t.Helper()
	bin := pluginBinary(t)
	o := runAs(t)
	p := &plugin{owner: o, home: home(t, o), logs: &syncBuffer{}, s3: s3test.Start(t), dbURL: testenv.DB(t).URL}
	p.bucket = p.s3.Bucket(t)
	p.socket = filepath.Join(p.home, "plugins", pluginName)
	o.mkdir(t, filepath.Join(p.home, "plugins"))
	o.writeFile(t, filepath.Join(p.home, "s3-secret"), []byte(p.s3.SecretAccessKey+"\n"), 0o600)
	// Two S3 stores in the same bucket, differing in prefix and compression.
	s3Store := func(name, prefix, compression string) string {
		return fmt.Sprintf(`
  %s:
    prefix: %s
    s3: {endpoint: %q, bucket: %s, pathStyle: true, accessKeyId: {env: TEST_S3_ACCESS_KEY_ID}, secretAccessKey: {file: %s/s3-secret}}
    wal: {compression: %s, maxParallel: %d}`, name, prefix, p.s3.Endpoint, p.bucket, p.home, compression, maxParallel)
	}
	config := fmt.Sprintf(`
defaultStore: local
stores:
  local:
    posix: {path: %s/store}
    wal: {maxParallel: %d}`, p.home, maxParallel) + s3Store("s3", "plinth", "zstd") + s3Store("s3gz", "barman", "gzip") + "\n"
	o.writeFile(t, filepath.Join(p.home, "config.yaml"), []byte(config), 0o644)

	cmd := exec.Command(bin, "serve")
	if o != nil {
		// Run as the owner directly (not through runuser, which turns SIGTERM into a kill
		// of its child), so the plugin's own graceful shutdown is what the test observes.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}}
	}
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(),
		"PLINTH_DATABASE_URL="+p.dbURL, "PLINTH_ADMIN_ADDR=off", "PLINTH_GRPC_ADDR=",
		"PLINTH_CNPGI_PLUGIN_DIR="+filepath.Join(p.home, "plugins"), "PLINTH_CNPGI_PLUGIN_NAME="+pluginName,
		"PLINTH_CNPGI_CONFIG="+filepath.Join(p.home, "config.yaml"), "PLINTH_CNPGI_SPOOL_DIR="+filepath.Join(p.home, "spool"),
		"PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug", "TEST_S3_ACCESS_KEY_ID="+p.s3.AccessKeyID,
		// WAL paths must lie in a data directory: the tests' PostgreSQL servers and fake
		// pg_wal directories all live under the plugin's home.
		"PLINTH_CNPGI_PGDATA="+filepath.Join(p.home, "pgdata"), "PLINTH_CNPGI_EXTRA_PGDATA="+p.home,
	)
	cmd.Env = append(cmd.Env, extraEnv...) // exec keeps the last value of a repeated name
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("plugin exited with %v after SIGTERM", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("plugin did not stop within 30s of SIGTERM")
		}
		if strings.Contains(p.logs.String(), p.s3.SecretAccessKey) {
			t.Error("the S3 secret access key reached the plugin's log")
		}
		if t.Failed() {
			t.Logf("plugin log:\n%s", p.logs.String())
		}
	})
	p.conn = p.waitServing(t, exited)
	return p
}

// waitServing waits for the socket and a SERVING health check, as the launcher does.
func (p *plugin) waitServing(t *testing.T, exited <-chan error) *grpc.ClientConn {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("plugin exited before serving: %v\n%s", err, p.logs.String())
		default:
		}
		if _, err := os.Stat(p.socket); err == nil {
			conn, err := grpc.NewClient("unix://"+p.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				t.Cleanup(func() { _ = conn.Close() })
				return conn
			}
			_ = conn.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("plugin not serving on %s after 60s:\n%s", p.socket, p.logs.String())
	return nil
}

// cluster is a Cluster definition that enables the plugin with the given parameters.
func cluster(name string, params map[string]string) []byte {
	var ps []string
	for k, v := range params {
		ps = append(ps, fmt.Sprintf("%q:%q", k, v))
	}
	return fmt.Appendf(nil, `{"apiVersion":"postgresql.cnpg.io/v1","kind":"Cluster","metadata":{"name":%q,"namespace":"default"},`+
		`"spec":{"instances":1,"plugins":[{"name":%q,"isWALArchiver":true,"parameters":{%s}}]}}`, name, pluginName, strings.Join(ps, ","))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// archivingPostgres starts a PostgreSQL 15 and a plugin that backs it up (its instance,
// named instance) and archives its WAL through the CLI into store under server; settings are
// further ALTER SYSTEM statements. PostgreSQL is restarted once for archive_mode.
func archivingPostgres(t *testing.T, instance, server, store string, settings ...string) (*pglocal.Cluster, *plugin, pglocal.Options) {
	t.Helper()
	return archivingPostgresTo(t, instance, fmt.Sprintf("-server-name=%s -object-store=%s", server, store), nil, settings...)
}

// archivingPostgresTo is archivingPostgres with the wal-archive flags that say where (e.g.
// -cluster-file) and more environment for the plugin.
func archivingPostgresTo(t *testing.T, instance, where string, env []string, settings ...string) (*pglocal.Cluster, *plugin, pglocal.Options) {
	t.Helper()
	if _, err := pglocal.FindBinaries(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	ctx := ctxT(t)
	opts := pglocal.Options{DataDir: filepath.Join(home(t, runAs(t)), "pgdata"), NoSync: true}
	pg, err := pglocal.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) }) // the running one, after the restart too
	p := startPlugin(t, 1, append([]string{"PLINTH_CNPGI_INSTANCE_URL=" + pg.URL("postgres"), "PLINTH_CNPGI_INSTANCE_NAME=" + instance,
		"PLINTH_CNPGI_PGDATA=" + opts.DataDir}, env...)...)
	opts.Port = pg.Port()
	exec1(t, ctx, pg.URL("postgres"), append([]string{"ALTER SYSTEM SET archive_mode = 'on'",
		fmt.Sprintf("ALTER SYSTEM SET archive_command = '%s wal-archive -socket=%s %s %%p'", pluginBinary(t), p.socket, where)},
		settings...)...)
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if pg, err = pglocal.Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	return pg, p, opts
}
