package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/service/servicetest"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/app"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is one database schema and NATS server shared by the server instances of a test.
type env struct {
	dbURL, natsURL string
	settings       []string // extra environment for every server of the test, e.g. timeouts
	logLevel       string   // of the servers' logs; default debug
	logs           *testenv.SyncBuffer
	mu             sync.Mutex
	secrets        []string // tokens issued during the test: none may reach a log line
	auth           *checkAuth
	authAddr       string
	authSrv        *grpc.Server
}

func newEnv(t testing.TB, settings ...string) *env {
	t.Helper()
	e := &env{dbURL: testenv.DB(t).URL, natsURL: testenv.NATS(t), settings: settings, logs: &testenv.SyncBuffer{}}
	e.startAuth(t)
	t.Cleanup(func() { e.assertNoSecrets(t) })
	return e
}

func (e *env) secret(s string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, s)
	return s
}

func (e *env) assertNoSecrets(t testing.TB) {
	logs := e.logs.String()
	if logs == "" {
		t.Error("no logs captured: the secret check would prove nothing")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.secrets {
		if strings.Contains(logs, s) {
			t.Errorf("a token reached the log")
		}
	}
}

// start runs one vagrant-server until the test ends and returns a client to it.
func (e *env) start(t testing.TB) vagrant.VagrantClient {
	t.Helper()
	c, _ := e.startStoppable(t)
	return c
}

// startStoppable is start that also returns a function stopping the server (gracefully,
// as a restart would) before the test ends.
func (e *env) startStoppable(t testing.TB) (vagrant.VagrantClient, func()) {
	t.Helper()
	addr, stop := e.serve(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return vagrant.NewVagrantClient(conn), stop
}

// serve runs one vagrant-server until the test ends (or stop) and returns its gRPC address.
func (e *env) serve(t testing.TB) (addr string, stop func()) {
	t.Helper()
	cfg := app.Defaults()
	environ := []string{"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.natsURL,
		"PLINTH_GRPC_ADDR=127.0.0.1:0", "PLINTH_ADMIN_ADDR=off", "PLINTH_SHUTDOWN_TIMEOUT=5s",
		"PLINTH_AUTH_ADDR=" + e.authAddr}
	environ = append(environ, e.settings...)
	if err := config.Load(&cfg, nil, environ); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	level := e.logLevel
	if level == "" {
		level = "debug"
	}
	log, err := telemetry.NewLogger(e.logs, "json", level)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg, log.With("instance", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	r := servicetest.Run(t, a)
	return a.GRPCAddr(), r.Stop
}

// call is the metadata a Vagrant client sends: the protocol range and, when given, a token.
func call(t testing.TB, token string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	md := metadata.Pairs("client-api-protocol", "1,1")
	if token != "" {
		md.Set("authorization", token)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// bootstrap returns the first login token of a fresh server.
func (e *env) bootstrap(t testing.TB, c vagrant.VagrantClient) string {
	t.Helper()
	resp, err := c.BootstrapToken(call(t, ""), &emptypb.Empty{})
	if err != nil {
		t.Fatalf("BootstrapToken: %v", err)
	}
	return e.secret(resp.GetToken())
}

// code requires err to carry want, and the message to contain every part of wantIn.
func code(t testing.TB, what string, err error, want codes.Code, wantIn ...string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != want {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
	for _, w := range wantIn {
		if !strings.Contains(st.Message(), w) {
			t.Fatalf("%s: message %q lacks %q", what, st.Message(), w)
		}
	}
}

// must takes a call's (value, error) and returns a check failing t on the error.
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
