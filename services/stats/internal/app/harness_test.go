package app_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/natsembed"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// validToken is the token of a viewer, the one role every stats call must allow; noRoleToken
// is live but auth names no role for it.
const (
	validToken  = "plt_stats-test-token-4f9c2a7e"
	noRoleToken = "plt_stats-no-role-token-0b5e"
)

// checkAuth plays auth's CheckToken (services.auth.AuthService), the only call stats makes to
// it: a viewer's token, answered with the account headers as auth sends them, and a token
// whose account has no role. Cross-service flows with the real auth live in e2e/.
type checkAuth struct {
	authpb.UnimplementedAuthServiceServer
	calls atomic.Int32
}

func (a *checkAuth) CheckToken(ctx context.Context, r *authpb.CheckTokenRequest) (*authpb.CheckTokenResponse, error) {
	a.calls.Add(1)
	switch r.GetToken() {
	case validToken:
		// A viewer: stats serves only reads (authz), so a viewer may call all of it.
		_ = grpc.SetHeader(ctx, authn.Account{ID: "account-1", Name: "vera", Role: authz.Viewer}.Headers())
	case noRoleToken:
		// An auth that names no role (one older than roles): the account may call nothing.
		_ = grpc.SetHeader(ctx, metadata.Pairs(authn.AccountHeader, "account-2"))
	default:
		return &authpb.CheckTokenResponse{}, nil
	}
	return &authpb.CheckTokenResponse{Success: true}, nil
}

// env is one database schema, one private NATS server (the inventory's streams have the
// publishers' fixed names) and one auth shared by the stats instances of a test.
type env struct {
	dbURL    string
	nats     *natsembed.Server
	auth     *checkAuth
	authAddr string
	authSrv  *grpc.Server
	logs     *testenv.SyncBuffer
	secrets  []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{dbURL: testenv.DB(t).URL, nats: testenv.NATSServer(t, 0, t.TempDir()), auth: &checkAuth{},
		logs: &testenv.SyncBuffer{}, secrets: []string{validToken}}
	// auth's stream exists before any service watches revocations on it.
	nc, js := e.jetStream(t)
	defer nc()
	stream := events.StreamOf(&eventsv1.TokenRevoked{})
	if _, err := events.EnsureStream(ctxT(t), js, stream.Name, stream.Subjects, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.authAddr = l.Addr().String()
	e.authSrv = grpc.NewServer()
	authpb.RegisterAuthServiceServer(e.authSrv, e.auth)
	go func() { _ = e.authSrv.Serve(l) }()
	t.Cleanup(e.authSrv.Stop)
	// Runs after every instance stopped: no log line of the whole test may hold a secret.
	t.Cleanup(func() { e.assertNoSecrets(t) })
	return e
}

func (e *env) assertNoSecrets(t testing.TB) {
	logs := e.logs.String()
	if logs == "" {
		t.Error("no logs captured: the secret check would prove nothing")
	}
	for _, line := range strings.Split(logs, "\n") {
		for _, s := range e.secrets {
			if s != "" && strings.Contains(line, s) {
				t.Errorf("secret %q in log line: %s", s, line)
			}
		}
	}
}

// config is the service's config for the test's backends, refreshing fast; environ adds or
// overrides variables.
func (e *env) config(t testing.TB, environ ...string) app.Config {
	t.Helper()
	cfg := app.Defaults()
	base := []string{
		"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.nats.ClientURL(), "PLINTH_AUTH_ADDR=" + e.authAddr,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=127.0.0.1:0", "PLINTH_LOG_FORMAT=json", "PLINTH_LOG_LEVEL=debug",
		"PLINTH_STATS_REFRESH_INTERVAL=200ms", "PLINTH_STATS_HISTORY_INTERVAL=1s",
	}
	if err := config.Load(&cfg, nil, append(base, environ...)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// instance is one running stats.
type instance struct {
	conn   *grpc.ClientConn
	client statspb.StatsServiceClient
	admin  string
	stop   func()
}

// start runs one stats instance until stop or the end of the test.
func (e *env) start(t testing.TB, cfg app.Config) *instance {
	t.Helper()
	log, err := telemetry.NewLogger(e.logs, "json", cfg.LogLevel)
	if err != nil {
		t.Fatal(err)
	}
	s, err := app.Open(context.Background(), cfg, log.With("instance", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Run(t, s)
	return &instance{conn: r.Conn, client: statspb.NewStatsServiceClient(r.Conn), admin: s.AdminAddr(), stop: r.Stop}
}

func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// authed is a context carrying the valid token.
func authed(t testing.TB) context.Context { return bearer(ctxT(t), validToken) }

// eventually polls cond until it holds, failing with cond's description of what it last saw.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v (last seen: %s)", what, timeout, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jetStream connects to the test's NATS.
func (e *env) jetStream(t testing.TB) (closeConn func(), js jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(e.nats.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err = jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc.Close, js
}
