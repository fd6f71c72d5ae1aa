package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is one database schema and NATS server shared by the auth instances of a test.
type env struct {
	dbURL, natsURL string
	logs, stdout   *testenv.SyncBuffer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{dbURL: testenv.DB(t).URL, natsURL: testenv.NATS(t), logs: &testenv.SyncBuffer{}, stdout: &testenv.SyncBuffer{}}
	// Runs after every instance stopped: no log line of the whole test may hold a secret.
	t.Cleanup(func() { assertNoSecrets(t, e.logs.String()) })
	return e
}

// leakMarkers are the passwords the tests use, the token prefix (every bearer token starts
// with it) and the password-hash prefix.
var leakMarkers = []string{"admin-secret-pw", "wrong-password", "bob-password", "another-pw", "whatever", "plt_", "$argon2id$"}

func assertNoSecrets(t testing.TB, logs string) {
	t.Helper()
	if logs == "" {
		t.Error("no logs captured: the secret check would prove nothing")
	}
	for _, line := range strings.Split(logs, "\n") {
		for _, m := range leakMarkers {
			if strings.Contains(line, m) {
				t.Errorf("secret %q in log line: %s", m, line)
			}
		}
	}
}

// testConfig is the service's config with cheap hashing and the test's backends.
func (e *env) config(t testing.TB, mutate ...func(*app.Config)) app.Config {
	t.Helper()
	cfg := app.Defaults()
	environ := []string{
		"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.natsURL,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug",
		"PLINTH_AUTH_ARGON2_MEMORY_KIB=8192", "PLINTH_AUTH_ARGON2_ITERATIONS=1", "PLINTH_ADMIN_PASSWORD=admin-secret-pw",
	}
	if err := config.Load(&cfg, nil, environ); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutate {
		m(&cfg)
	}
	if err := cfg.ValidateServe(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// start runs one auth instance until the test ends and returns a client connection to it.
func (e *env) start(t testing.TB, cfg app.Config) *grpc.ClientConn {
	t.Helper()
	log, err := telemetry.NewLogger(e.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, log.With("instance", t.Name()), e.stdout)
	if err != nil {
		t.Fatal(err)
	}
	return servicetest.Run(t, a).Conn
}

// dial connects to addr until the test ends.
func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func login(t testing.TB, ctx context.Context, c authpb.AuthServiceClient, user, pw string) *authpb.LoginResponse {
	t.Helper()
	resp, err := c.Login(ctx, &authpb.LoginRequest{Username: user, Password: pw})
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return resp
}

func checkToken(t *testing.T, ctx context.Context, c authpb.AuthServiceClient, token string) bool {
	t.Helper()
	resp, err := c.CheckToken(ctx, &authpb.CheckTokenRequest{Token: token})
	if err != nil {
		t.Fatalf("CheckToken: %v", err)
	}
	return resp.GetSuccess()
}

var _ = slog.Default

// metadataMD lets a test read response headers as a plain map.
type metadataMD = metadata.MD
