package app_test

import (
	"context"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	kaaspb "github.com/plinth-dev/plinth/libs/api/cnct/kaas/api"
	kaasv1 "github.com/plinth-dev/plinth/libs/api/plinth/kaas/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/kaas/internal/app"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas"
	"github.com/plinth-dev/plinth/services/kaas/internal/provider/maas/maastest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Secrets the tests use; none may ever reach a log line.
const (
	adminPassword = "admin-secret-pw"
	maasSecret    = "maas-token-secret-xyz"
)

var (
	maasKey   = maas.APIKey{Consumer: "kaas-consumer", Token: "kaas-token", Secret: maasSecret}
	secretKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
)

// env is what kaas instances of a test share: a database schema, NATS, a running auth with
// a login token, and a MAAS region.
type env struct {
	dbURL, natsURL string
	authAddr       string
	token          string
	accountID      string // the admin's user id, the actor of the env's calls
	maas           *maastest.Server
	logs           *testenv.SyncBuffer
}

func newEnv(t testing.TB, mo maastest.Options) *env {
	t.Helper()
	began := time.Now()
	defer func() { t.Logf("env ready in %v", time.Since(began)) }()
	e := &env{dbURL: testenv.DB(t).URL, natsURL: testenv.NATS(t), logs: &testenv.SyncBuffer{}}
	auth := startProc(t, "auth", []string{"PLINTH_DATABASE_URL=" + testenv.DB(t).URL, "PLINTH_NATS_URL=" + e.natsURL,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=off", "PLINTH_ADMIN_PASSWORD=" + adminPassword,
		"PLINTH_AUTH_ARGON2_MEMORY_KIB=8192", "PLINTH_AUTH_ARGON2_ITERATIONS=1"}, true)
	e.authAddr = auth.Addr()
	conn, err := grpc.NewClient(e.authAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := authpb.NewAuthServiceClient(conn).Login(ctxT(t, 30*time.Second), &authpb.LoginRequest{Username: "admin", Password: adminPassword})
	if err != nil {
		t.Fatal(err)
	}
	e.token = resp.GetToken()
	e.accountID = resp.GetAccountId()
	mo.Key = maasKey
	e.maas = maastest.New(mo)
	t.Cleanup(e.maas.Close)
	t.Cleanup(func() { assertNoSecrets(t, e.logs.String(), e.token) })
	return e
}

// assertNoSecrets fails the test if a log line holds a secret.
func assertNoSecrets(t testing.TB, logs string, token string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		for _, s := range []string{adminPassword, maasSecret, token, secretKey, "PRIVATE KEY"} {
			if s != "" && strings.Contains(line, s) {
				t.Errorf("a secret reached the log: %.300s", line)
			}
		}
	}
}

// config is kaas on the env's backends with the MAAS provider and quick timings.
func (e *env) config(t testing.TB, mutate ...func(*app.Config)) app.Config {
	t.Helper()
	cfg := app.Defaults()
	if err := config.Load(&cfg, nil, e.environ()); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutate {
		m(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// environ is the environment of a kaas on the env's backends (MAAS provider, quick timings).
func (e *env) environ() []string {
	return []string{
		"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.natsURL, "PLINTH_AUTH_ADDR=" + e.authAddr,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_KAAS_REST_ADDR=127.0.0.1:0",
		"PLINTH_KAAS_SECRET_KEY=" + secretKey, "PLINTH_KAAS_PROVIDER=maas",
		"PLINTH_KAAS_MAAS_URL=" + e.maas.URL(), "PLINTH_KAAS_MAAS_API_KEY=" + maasKey.Consumer + ":" + maasKey.Token + ":" + maasKey.Secret,
		"PLINTH_KAAS_POLL=50ms", "PLINTH_KAAS_RESYNC=1s", "PLINTH_KAAS_LEASE=3s", "PLINTH_KAAS_RETRY_MAX=300ms",
		"PLINTH_KAAS_FAIL_AFTER=3", "PLINTH_KAAS_CALL_TIMEOUT=10s", "PLINTH_SHUTDOWN_TIMEOUT=5s",
	}
}

// instance is one in-process kaas.
type instance struct {
	*app.App
	client kaaspb.ClusterClient
	info   kaasv1.ClusterInfoServiceClient
	stop   func()
}

// start runs kaas in-process until the test ends (or stop) and returns a client.
func (e *env) start(t testing.TB, cfg app.Config) *instance {
	t.Helper()
	log, err := telemetry.NewLogger(e.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, log.With("instance", cfg.Instance))
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Run(t, a.Service)
	return &instance{App: a, client: kaaspb.NewClusterClient(r.Conn), info: kaasv1.NewClusterInfoServiceClient(r.Conn), stop: r.Stop}
}

// ctx is a call context carrying the env's token; tests keep one for their whole run.
func (e *env) ctx(t testing.TB) context.Context {
	return metadata.AppendToOutgoingContext(ctxT(t, 10*time.Minute), "authorization", "Bearer "+e.token)
}

// waitStatus polls GetCluster until the cluster has status want (and, when says is given,
// a message containing it), failing after timeout with the last answer.
func (e *env) waitStatus(t testing.TB, c kaaspb.ClusterClient, name string, want kaaspb.ClusterStatus, timeout time.Duration, says ...string) *kaaspb.ClusterDetailItem {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *kaaspb.GetClusterReply
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = c.GetCluster(e.ctx(t), &kaaspb.GetClusterMsg{Name: name})
		if lastErr == nil && last.GetCluster().GetStatus() == want && (len(says) == 0 || strings.Contains(last.GetCluster().GetStatusMessage(), says[0])) {
			return last.GetCluster()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("cluster %s: want %s %v; last: %v %v", name, want, says, last.GetCluster(), lastErr)
	return nil
}

// waitGone polls until GetCluster answers NotFound.
func (e *env) waitGone(t testing.TB, c kaaspb.ClusterClient, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		_, err := c.GetCluster(e.ctx(t), &kaaspb.GetClusterMsg{Name: name})
		if err != nil && strings.Contains(err.Error(), "NotFound") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("cluster %s still exists", name)
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

func grpcConn(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
